import Foundation
import Logging
import RangeCache
import Testing

/// `CacheIndex.register(feedURL:episodes:formerKeys:)` moves an episode
/// cached under its former key (a show's URL scope) to its new key (the
/// show's guid scope) with its file, ranges, validator and variant, and
/// loses nothing when both keys are in the index.
@Suite struct EpisodeRekeyingTests {
    // MARK: - Private properties

    private let logger = Logger(label: "test")
    private let feedURL = "https://example.com/feed.xml"
    private let enclosure = "https://cdn.example.com/a.mp3"
    private let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    private var oldKey: String { CacheIndex.episodeKey(feedURL: feedURL, identity: "a") }
    private var newKey: String { CacheIndex.episodeKey(feedURL: "podcast:guid:g", identity: "a") }

    // MARK: - Helpers

    private func withIndex(_ body: (CacheIndex) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("EpisodeRekeyingTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(try CacheIndex(directory: directory.path + "/cache", logger: logger))
    }

    /// Registers `key` and caches `bytes[range]` of it as the reader does:
    /// written, synced, then committed, with a validator and variant marks.
    private func cache(_ index: CacheIndex, key: String, _ range: Range<Int64>, etag: String) throws {
        _ = try index.register(feedURL: feedURL, episodes: [(key: key, url: enclosure)])
        let file = try ScratchFile(path: index.dataPath(forKey: key), length: Int64(bytes.count))
        try file.write(Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]), at: range.lowerBound)
        try file.synchronize()
        try index.setValidator(EpisodeValidator(
            key: key, length: Int64(bytes.count), etag: etag, lastModified: nil, pinnedURL: enclosure + "?signed",
            pinnedIssuer: "public"))
        try index.markUnstable(key: key, reason: "test")
        try index.commitRanges([(key: key, ranges: [range])])
    }

    private func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map(Array.init)
    }

    // MARK: - Tests

    @Test func anEpisodeCachedUnderItsURLKeyMovesToItsGUIDKeyWithEverything() throws {
        try withIndex { index in
            try cache(index, key: oldKey, 1_000..<6_000, etag: "\"v1\"")
            let before = try #require(try index.episode(key: oldKey))

            let registered = try index.register(
                feedURL: feedURL, episodes: [(key: newKey, url: enclosure)], formerKeys: [newKey: oldKey])

            let record = try #require(registered.records.first)
            #expect(record.key == newKey)
            #expect(record.id == before.id, "the row is moved, not copied: its inode stays")
            #expect(record.ranges == [1_000..<6_000])
            #expect(record.length == Int64(bytes.count))
            #expect(record.etag == "\"v1\"")
            #expect(record.variant == before.variant)
            #expect(try index.episode(key: oldKey) == nil)
            #expect(!FileManager.default.fileExists(atPath: index.dataPath(forKey: oldKey)))
            let moved = try #require(contents(index.dataPath(forKey: newKey)))
            #expect(Array(moved[1_000..<6_000]) == Array(bytes[1_000..<6_000]))
            #expect(moved.count == bytes.count)
            // Registered again (the next mount): nothing changes.
            let again = try index.register(
                feedURL: feedURL, episodes: [(key: newKey, url: enclosure)], formerKeys: [newKey: oldKey])
            #expect(again.records.first == record)
        }
    }

    @Test func whenBothKeysAreCachedNeitherLosesAByte() throws {
        try withIndex { index in
            try cache(index, key: oldKey, 0..<2_000, etag: "\"old\"")
            try cache(index, key: newKey, 5_000..<9_000, etag: "\"new\"")

            let registered = try index.register(
                feedURL: feedURL, episodes: [(key: newKey, url: enclosure)], formerKeys: [newKey: oldKey])

            let record = try #require(registered.records.first)
            #expect(record.ranges == [5_000..<9_000])
            #expect(record.etag == "\"new\"")
            let old = try #require(try index.episode(key: oldKey))
            #expect(old.ranges == [0..<2_000])
            #expect(contents(index.dataPath(forKey: oldKey)).map { Array($0[0..<2_000]) } == Array(bytes[0..<2_000]))
            #expect(
                contents(index.dataPath(forKey: newKey)).map { Array($0[5_000..<9_000]) }
                    == Array(bytes[5_000..<9_000]))
        }
    }

    @Test func anOrphanFileUnderTheNewKeyIsReplacedByTheCachedOne() throws {
        try withIndex { index in
            try cache(index, key: oldKey, 0..<4_000, etag: "\"v1\"")
            // Left by a crash before a take-over's commit: no row owns it.
            _ = FileManager.default.createFile(atPath: index.dataPath(forKey: newKey), contents: Data([1, 2, 3]))

            let record = try #require(
                try index.register(
                    feedURL: feedURL, episodes: [(key: newKey, url: enclosure)], formerKeys: [newKey: oldKey]
                ).records.first)

            #expect(record.ranges == [0..<4_000])
            #expect(contents(index.dataPath(forKey: newKey)).map { Array($0[0..<4_000]) } == Array(bytes[0..<4_000]))
        }
    }

    @Test func aRowWhoseFileIsGoneMovesWithoutClaimingBytes() throws {
        try withIndex { index in
            try cache(index, key: oldKey, 0..<4_000, etag: "\"v1\"")
            try FileManager.default.removeItem(atPath: index.dataPath(forKey: oldKey))

            let record = try #require(
                try index.register(
                    feedURL: feedURL, episodes: [(key: newKey, url: enclosure)], formerKeys: [newKey: oldKey]
                ).records.first)

            #expect(record.key == newKey)
            #expect(record.ranges.isEmpty, "the index never lists bytes that are not on disk")
            #expect(!FileManager.default.fileExists(atPath: index.dataPath(forKey: newKey)))
        }
    }

    @Test func withoutAFormerKeyAnEpisodeIsRegisteredAfresh() throws {
        try withIndex { index in
            try cache(index, key: oldKey, 0..<4_000, etag: "\"v1\"")
            let record = try #require(
                try index.register(feedURL: feedURL, episodes: [(key: newKey, url: enclosure)]).records.first)
            #expect(record.ranges.isEmpty)
            #expect(try index.episode(key: oldKey)?.ranges == [0..<4_000])
        }
    }
}
