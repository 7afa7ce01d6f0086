import Feeds
import Foundation
import Logging
import PodFS
import RangeCache
import Testing

/// A show's cache keys are scoped by its `podcast:guid` where the feed has a
/// usable one, else by its feed URL; two subscriptions never share a guid
/// scope, and a show that changes host keeps its keys.
@Suite struct CacheScopeTests {
    // MARK: - Helpers

    private static let urlA = "https://a.example/feed.xml"
    private static let urlB = "https://b.example/shows/feed.xml"
    private static let guid = "917393e3-1b1e-5cef-ace4-edaa54e1f810"

    private var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    private static func feed(guid: String?) -> ParsedFeed {
        var feed = ParsedFeed(
            title: "Show", imageURL: "https://cdn.example/cover.png",
            episodes: (1...3).map { n in
                ParsedEpisode(
                    guid: "ep\(n)", title: "Episode \(n)", published: 1_793_527_200 + Int64(n) * 86_400,
                    enclosureURL: "https://cdn.example/ep\(n).mp3", enclosureType: "audio/mpeg",
                    transcripts: [ParsedTranscript(url: "https://cdn.example/ep\(n).vtt", type: "text/vtt")],
                    chapters: ParsedChapters(url: "https://cdn.example/ep\(n).json", type: "application/json"))
            })
        feed.showGUID = guid
        return feed
    }

    private func keys(_ url: String, guid: String?) -> [String] {
        ShowLayout(feedURL: url, feed: Self.feed(guid: guid), directoryName: "Show", logger: logger).files.map(\.key)
    }

    private func withIndex(_ body: (CacheIndex) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-scope-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(try CacheIndex(directory: directory, logger: logger))
    }

    // MARK: - The rule

    @Test func aGUIDIsTrimmedAndLowercased() {
        let scope = CacheScope(feedURL: Self.urlA, showGUID: "  \n917393E3-1B1E-5CEF-ACE4-EDAA54E1F810\t ")
        #expect(scope.guid == Self.guid)
        #expect(scope.keyScope == "podcast:guid:" + Self.guid)
        #expect(scope.urlScope == .feedURL(Self.urlA))
    }

    @Test func anEmptyOrAbsurdGUIDLeavesTheURLScope() {
        let absurd = [
            nil, "", "   \n ", String(repeating: "a", count: 201), "abc\u{0}def", "abc\u{7}", "line\nbreak",
            "del\u{7F}", "c1\u{85}x",
        ]
        for value in absurd {
            let scope = CacheScope(feedURL: Self.urlA, showGUID: value)
            #expect(scope.guid == nil, "\(String(describing: value)) is no identity")
            #expect(scope.keyScope == Self.urlA)
            #expect(scope.urlScope == nil)
        }
        #expect(CacheScope.normalizedGUID(String(repeating: "a", count: 200)) == String(repeating: "a", count: 200))
        #expect(CacheScope.normalizedGUID("Ünïcode-Show") == "ünïcode-show")
    }

    @Test func theURLScopeKeepsTheKeysOfEarlierPodfs() {
        // Keys made before shows were known by guid, for caches already on disk.
        let layout = ShowLayout(feedURL: Self.urlA, feed: Self.feed(guid: nil), directoryName: "Show", logger: logger)
        #expect(layout.episodes.map(\.key) == (1...3).map { CacheIndex.episodeKey(feedURL: Self.urlA, identity: "ep\($0)") })
        #expect(layout.files.allSatisfy { $0.formerKey == nil })
    }

    @Test func everyFileOfAShowWithAGUIDIsKeyedByItWhateverItsURL() {
        let onA = keys(Self.urlA, guid: Self.guid)
        #expect(onA.count == 10, "3 episodes, a cover, 3 transcripts, 3 chapters")
        #expect(keys(Self.urlB, guid: Self.guid.uppercased()) == onA)
        #expect(Set(onA).isDisjoint(with: keys(Self.urlA, guid: nil)))
        #expect(keys(Self.urlB, guid: nil) != keys(Self.urlA, guid: nil))
    }

    @Test func eachFilesFormerKeyIsItsKeyInTheURLScope() {
        let guid = ShowLayout(feedURL: Self.urlA, feed: Self.feed(guid: Self.guid), directoryName: "Show", logger: logger)
        #expect(guid.files.map(\.formerKey) == keys(Self.urlA, guid: nil))
    }

    // MARK: - The catalogue

    @Test func aSecondSubscriptionWithTheSameGUIDFallsBackToItsURL() throws {
        try withIndex { index in
            let catalog = try Catalog(
                feeds: [(url: Self.urlA, feed: Self.feed(guid: Self.guid)), (url: Self.urlB, feed: Self.feed(guid: Self.guid))],
                index: index, logger: logger)
            let shows = catalog.shows
            #expect(shows.map(\.scope.guid) == [Self.guid, nil])
            #expect((shows[0].episodes + shows[0].extras).map(\.key) == keys(Self.urlA, guid: Self.guid))
            #expect((shows[1].episodes + shows[1].extras).map(\.key) == keys(Self.urlB, guid: nil))
            let all = shows.flatMap { $0.episodes + $0.extras }.map(\.key)
            #expect(Set(all).count == all.count, "no two files share a cache file")

            // A third, landing at a refresh, falls back too; the holder keeps it.
            let third = "https://c.example/feed"
            _ = try catalog.update(url: third, feed: Self.feed(guid: Self.guid))
            _ = try catalog.update(url: Self.urlA, feed: Self.feed(guid: Self.guid))
            #expect(catalog.shows.map(\.scope.guid) == [Self.guid, nil, nil])
            #expect(catalog.shows[2].episodes.map(\.key) == Array(keys(third, guid: nil).prefix(3)))
        }
    }

    @Test func aShowThatChangesHostKeepsItsCachedEpisodes() throws {
        try withIndex { index in
            let first = try Catalog(feeds: [(url: Self.urlA, feed: Self.feed(guid: Self.guid))], index: index, logger: logger)
            let key = first.shows[0].episodes[0].key
            try index.commitRanges([(key: key, ranges: [0..<100])])

            // The next mount: subscribed at B, same guid, A gone.
            let second = try Catalog(feeds: [(url: Self.urlB, feed: Self.feed(guid: Self.guid))], index: index, logger: logger)
            #expect(second.shows[0].episodes[0].key == key)
            #expect(try index.episode(key: key)?.ranges == [0..<100])
            // Registered under the URL it is subscribed by (`cache clear B`).
            let feeds = try index.snapshot()
            #expect(feeds.first { $0.url == Self.urlB }?.episodes.map(\.key).contains(key) == true)
            #expect(feeds.first { $0.url == Self.urlA }?.episodes.map(\.key).contains(key) == false)
        }
    }

    @Test func aFeedThatGainsAGUIDTakesOverItsURLKeyedCache() throws {
        try withIndex { index in
            let before = try Catalog(feeds: [(url: Self.urlA, feed: Self.feed(guid: nil))], index: index, logger: logger)
            let oldKey = before.shows[0].episodes[0].key
            let file = try ScratchFile(path: index.dataPath(forKey: oldKey), length: 100)
            try file.write(Array(repeating: 7, count: 100), at: 0)
            try file.synchronize()
            try index.commitRanges([(key: oldKey, ranges: [0..<100])])

            let after = try Catalog(feeds: [(url: Self.urlA, feed: Self.feed(guid: Self.guid))], index: index, logger: logger)
            let episode = after.shows[0].episodes[0]
            #expect(episode.key != oldKey)
            #expect(try index.episode(key: episode.key)?.ranges == [0..<100])
            #expect(FileManager.default.contents(atPath: index.dataPath(forKey: episode.key)) == Data(repeating: 7, count: 100))
            #expect(try index.episode(key: oldKey) == nil)
        }
    }

    @Test func aShowKeepsItsScopeForTheMountWhenItsFeedGainsAGUID() throws {
        try withIndex { index in
            let catalog = try Catalog(feeds: [(url: Self.urlA, feed: Self.feed(guid: nil))], index: index, logger: logger)
            let keys = catalog.shows[0].episodes.map(\.key)
            _ = try catalog.update(url: Self.urlA, feed: Self.feed(guid: Self.guid))
            #expect(catalog.shows[0].episodes.map(\.key) == keys, "open files keep their keys until the next mount")
        }
    }
}
