import Foundation
import Logging
import RangeCache
import Testing

/// `CacheIndex` keeps stable ids, committed ranges, validators and feed
/// bodies across reopening, and survives a damaged database.
@Suite struct CacheIndexTests {
    // MARK: - Private properties

    private let logger = Logger(label: "test")
    private let feedURL = "https://example.com/feed.xml"

    // MARK: - Helpers

    /// Runs `body` with the path of a fresh temporary cache directory (not
    /// yet created), removed afterwards even when `body` throws.
    private func withCacheDirectory(_ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("CacheIndexTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory.path + "/cache")
    }

    private func key(_ identity: String) -> String {
        CacheIndex.episodeKey(feedURL: feedURL, identity: identity)
    }

    // MARK: - Opening

    @Test func openingCreatesTheDirectoryAndDatabase() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            #expect(index.directory == directory)
            #expect(index.databasePath == directory + "/index.sqlite")
            #expect(index.dataPath(forKey: "abc") == directory + "/data/abc")
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: directory + "/data", isDirectory: &isDirectory))
            #expect(isDirectory.boolValue)
            #expect(FileManager.default.fileExists(atPath: index.databasePath))
            #expect(try index.episode(key: "missing") == nil)
            #expect(try index.feedBody(url: feedURL) == nil)
        }
    }

    // MARK: - Registering

    @Test func registeredIDsAreStableAcrossReopen() throws {
        try withCacheDirectory { directory in
            let episodes = [
                (key: key("a"), url: "https://cdn.example.com/a.mp3"),
                (key: key("b"), url: "https://cdn.example.com/b.mp3"),
                (key: key("c"), url: "https://cdn.example.com/c.mp3"),
            ]
            let first: (feedID: Int64, records: [EpisodeRecord])
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                first = try index.register(feedURL: feedURL, episodes: episodes)
                #expect(first.records.map(\.key) == episodes.map(\.key))
                #expect(first.records.map(\.url) == episodes.map(\.url))
                #expect(Set(first.records.map(\.id)).count == 3)
                #expect(first.records.allSatisfy { $0.ranges.isEmpty && $0.length == nil })
                #expect(try index.feedID(url: feedURL) == first.feedID)
            }
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                // Different order, plus one new episode.
                let again = try index.register(
                    feedURL: feedURL,
                    episodes: [episodes[2], (key: key("d"), url: "https://cdn.example.com/d.mp3"), episodes[0]])
                #expect(again.feedID == first.feedID)
                #expect(again.records[0].id == first.records[2].id)
                #expect(again.records[2].id == first.records[0].id)
                #expect(!first.records.map(\.id).contains(again.records[1].id))
                #expect(try index.episode(key: key("b"))?.id == first.records[1].id)
                #expect(try index.episode(key: key("b")) == first.records[1])
            }
        }
    }

    @Test func reRegisteringKeepsRangesAndUpdatesTheURL() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            let episodeKey = key("a")
            let registered = try index.register(
                feedURL: feedURL, episodes: [(key: episodeKey, url: "https://old.example.com/a.mp3")])
            try index.commitRanges([(key: episodeKey, ranges: [0..<100])])
            let again = try index.register(
                feedURL: feedURL, episodes: [(key: episodeKey, url: "https://new.example.com/a.mp3")])
            #expect(again.records[0].id == registered.records[0].id)
            #expect(again.records[0].url == "https://new.example.com/a.mp3")
            #expect(again.records[0].ranges == [0..<100])
        }
    }

    @Test func feedsGetDistinctStableIDs() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            let one = try index.feedID(url: "https://one.example.com/rss")
            let two = try index.feedID(url: "https://two.example.com/rss")
            #expect(one != two)
            #expect(try index.feedID(url: "https://one.example.com/rss") == one)
        }
    }

    // MARK: - Ranges

    @Test func committedRangesSurviveReopen() throws {
        try withCacheDirectory { directory in
            let a = key("a")
            let b = key("b")
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                _ = try index.register(
                    feedURL: feedURL,
                    episodes: [(key: a, url: "https://x.example/a"), (key: b, url: "https://x.example/b")])
                try index.commitRanges([
                    (key: a, ranges: [500..<1_000, 0..<100, 2_000..<(1 << 40)]),
                    (key: b, ranges: [10..<20, 30..<30]),
                ])
            }
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                #expect(try index.episode(key: a)?.ranges == [0..<100, 500..<1_000, 2_000..<(1 << 40)])
                // Empty ranges are never stored.
                #expect(try index.episode(key: b)?.ranges == [10..<20])
            }
        }
    }

    @Test func committingReplacesTheEarlierRanges() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            let a = key("a")
            _ = try index.register(feedURL: feedURL, episodes: [(key: a, url: "https://x.example/a")])
            try index.commitRanges([(key: a, ranges: [0..<10, 20..<30])])
            try index.commitRanges([(key: a, ranges: [0..<30])])
            #expect(try index.episode(key: a)?.ranges == [0..<30])
            // An empty batch changes nothing.
            try index.commitRanges([])
            #expect(try index.episode(key: a)?.ranges == [0..<30])
        }
    }

    @Test func committingForAnUnknownKeyStoresNothing() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            try index.commitRanges([(key: key("ghost"), ranges: [0..<10])])
            #expect(try index.episode(key: key("ghost")) == nil)
        }
    }

    @Test func droppedRangesStayDroppedAfterReopen() throws {
        try withCacheDirectory { directory in
            let a = key("a")
            let b = key("b")
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                _ = try index.register(
                    feedURL: feedURL,
                    episodes: [(key: a, url: "https://x.example/a"), (key: b, url: "https://x.example/b")])
                try index.commitRanges([(key: a, ranges: [0..<10]), (key: b, ranges: [5..<50])])
                try index.dropRanges(key: a)
                #expect(try index.episode(key: a)?.ranges == [])
                #expect(try index.episode(key: b)?.ranges == [5..<50])
            }
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                let record = try #require(try index.episode(key: a))
                #expect(record.ranges.isEmpty)
                #expect(record.url == "https://x.example/a")
                #expect(try index.episode(key: b)?.ranges == [5..<50])
            }
        }
    }

    // MARK: - Validators

    @Test func validatorIsStoredAndCanBeCleared() throws {
        try withCacheDirectory { directory in
            let a = key("a")
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                _ = try index.register(feedURL: feedURL, episodes: [(key: a, url: "https://x.example/a")])
                try index.setValidator(EpisodeValidator(key: a, length: 12_345_678, etag: "\"abc\"", lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"))
            }
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                let record = try #require(try index.episode(key: a))
                #expect(record.length == 12_345_678)
                #expect(record.etag == "\"abc\"")
                #expect(record.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
                try index.setValidator(EpisodeValidator(key: a, length: 99, etag: nil, lastModified: nil))
                let cleared = try #require(try index.episode(key: a))
                #expect(cleared.length == 99)
                #expect(cleared.etag == nil)
                #expect(cleared.lastModified == nil)
            }
        }
    }

    @Test func lengthsAndRangesNoEpisodeCanHaveAreNotReadBack() throws {
        try withCacheDirectory { directory in
            let a = key("a")
            let b = key("b")
            let index = try CacheIndex(directory: directory, logger: logger)
            _ = try index.register(
                feedURL: feedURL, episodes: [(key: a, url: "https://x.example/a"), (key: b, url: "https://x.example/b")])
            // What a damaged or hand-edited index could hold.
            try index.commitRanges([
                (key: a, ranges: [0..<100, 200..<Int64.max, (1 << 40)..<((1 << 40) + 1)]),
            ])
            try index.setValidator(EpisodeValidator(key: a, length: Int64.max, etag: nil, lastModified: nil))
            try index.setValidator(EpisodeValidator(key: b, length: -1, etag: nil, lastModified: nil))
            let record = try #require(try index.episode(key: a))
            #expect(record.ranges == [0..<100])
            #expect(record.length == nil)
            #expect(try index.usage().first { $0.key == a }?.bytes == 100)
            #expect(try index.episode(key: b)?.length == nil)
            try index.setValidator(EpisodeValidator(key: b, length: 1 << 40, etag: nil, lastModified: nil))
            #expect(try index.episode(key: b)?.length == 1 << 40)
        }
    }

    // MARK: - Feed bodies

    @Test func feedBodyRoundTrips() throws {
        try withCacheDirectory { directory in
            let body = Array("<rss><channel><title>Ünïcode ✓</title></channel></rss>".utf8) + [0, 0xff, 0x80]
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                // Registering the feed alone stores no body.
                _ = try index.feedID(url: feedURL)
                #expect(try index.feedBody(url: feedURL) == nil)
                try index.saveFeedBody(
                    url: feedURL, body: body, etag: "W/\"1\"", lastModified: nil, fetchedAt: 1_700_000_000)
            }
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                let stored = try #require(try index.feedBody(url: feedURL))
                #expect(stored.body == body)
                #expect(stored.etag == "W/\"1\"")
                #expect(stored.lastModified == nil)
                #expect(stored.fetchedAt == 1_700_000_000)
                try index.saveFeedBody(
                    url: feedURL, body: [1, 2, 3], etag: nil, lastModified: "yesterday", fetchedAt: 5)
                let replaced = try #require(try index.feedBody(url: feedURL))
                #expect(replaced.body == [1, 2, 3])
                #expect(replaced.etag == nil)
                #expect(replaced.lastModified == "yesterday")
                #expect(replaced.fetchedAt == 5)
                #expect(try index.feedBody(url: "https://other.example.com/feed") == nil)
            }
        }
    }

    @Test func emptyFeedBodyIsStoredAsEmptyNotMissing() throws {
        try withCacheDirectory { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            try index.saveFeedBody(url: feedURL, body: [], etag: nil, lastModified: nil, fetchedAt: 1)
            let stored = try #require(try index.feedBody(url: feedURL))
            #expect(stored.body == [])
            #expect(stored.fetchedAt == 1)
        }
    }

    // MARK: - Keys

    @Test func episodeKeyIsDeterministicHex() {
        let first = CacheIndex.episodeKey(feedURL: feedURL, identity: "episode-1")
        let second = CacheIndex.episodeKey(feedURL: feedURL, identity: "episode-1")
        #expect(first == second)
        #expect(first.count == 32)
        #expect(first.allSatisfy { "0123456789abcdef".contains($0) })
        // Pinned: keys name files on disk, so they must never change.
        #expect(first == "15c2ae07ee24094b8a340d184d05cd6d")
        #expect(CacheIndex.episodeKey(feedURL: "", identity: "") == "71b8262bb6e2e086c86076cec82a3dba")
    }

    @Test func episodeKeyDiffersForDifferentInputs() {
        let keys = [
            CacheIndex.episodeKey(feedURL: feedURL, identity: "episode-1"),
            CacheIndex.episodeKey(feedURL: feedURL, identity: "episode-2"),
            CacheIndex.episodeKey(feedURL: "https://example.com/other.xml", identity: "episode-1"),
            // The separator keeps the split point part of the key.
            CacheIndex.episodeKey(feedURL: "ab", identity: "c"),
            CacheIndex.episodeKey(feedURL: "a", identity: "bc"),
            CacheIndex.episodeKey(feedURL: "", identity: ""),
        ]
        #expect(Set(keys).count == keys.count)
        #expect(keys.allSatisfy { $0.count == 32 })
    }

    // MARK: - Corruption

    @Test func corruptDatabaseIsMovedAsideAndReplaced() throws {
        try withCacheDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var generator = SystemRandomNumberGenerator()
            let garbage = (0..<8_192).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let databasePath = directory + "/index.sqlite"
            try Data(garbage).write(to: URL(fileURLWithPath: databasePath))

            let index = try CacheIndex(directory: directory, logger: logger)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            let aside = names.filter { $0.hasPrefix("index.sqlite.corrupt-") }
            #expect(aside.count == 1)
            if let name = aside.first {
                let moved = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
                #expect(Array(moved) == garbage)
            }

            // The new index is empty and works.
            #expect(try index.episode(key: key("a")) == nil)
            let a = key("a")
            let registered = try index.register(feedURL: feedURL, episodes: [(key: a, url: "https://x.example/a")])
            try index.commitRanges([(key: a, ranges: [0..<42])])
            #expect(try index.episode(key: a)?.ranges == [0..<42])
            #expect(try index.episode(key: a)?.id == registered.records[0].id)
        }
    }

    @Test func emptyDatabaseFileIsAcceptedAsNew() throws {
        try withCacheDirectory { directory in
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: directory + "/index.sqlite", contents: Data())
            let index = try CacheIndex(directory: directory, logger: logger)
            _ = try index.feedID(url: feedURL)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(!names.contains { $0.hasPrefix("index.sqlite.corrupt-") })
        }
    }
}

/// The mount's quick total of cached bytes agrees with `usage()`.
@Suite struct CachedBytesTests {
    @Test func theTotalIsTheSumOfUsage() throws {
        let directory = NSTemporaryDirectory() + "podfs-cached-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory, logger: logger)
        #expect(try index.cachedBytes() == 0)
        _ = try index.register(feedURL: "https://f.example/feed", episodes: [(key: "a", url: "u1"), (key: "b", url: "u2")])
        try index.commitRanges([(key: "a", ranges: [0..<100, 200..<250]), (key: "b", ranges: [10..<20])])
        #expect(try index.cachedBytes() == 160)
        #expect(try index.cachedBytes() == index.usage().reduce(0) { $0 + $1.bytes })
    }
}
