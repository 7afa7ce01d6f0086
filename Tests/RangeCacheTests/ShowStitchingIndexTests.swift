import Foundation
import Logging
import RangeCache
import Testing

/// `CacheIndex.feedsWithUnstableEpisodes(notCounting:)`: the feeds with an
/// episode marked unstable by evidence of its own (docs/DESIGN.md, "A show
/// that stitches").
@Suite struct ShowStitchingIndexTests {
    private let inherited = "as another episode of its show"

    @Test func onlyMarksOfAnEpisodesOwnCount() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ShowStitchingIndexTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let index = try CacheIndex(directory: directory.path + "/cache", logger: Logger(label: "test"))
        let show = "https://stitching.example/feed.xml", other = "https://plain.example/feed.xml"
        let key = { (feed: String, id: String) in CacheIndex.episodeKey(feedURL: feed, identity: id) }
        let stitching = try index.register(
            feedURL: show, episodes: [(key(show, "a"), "https://s/a.mp3"), (key(show, "b"), "https://s/b.mp3")])
        let plain = try index.register(feedURL: other, episodes: [(key(other, "c"), "https://p/c.mp3")])
        #expect(index.feedsWithUnstableEpisodes(notCounting: inherited) == [])
        try index.markUnstable(key: key(show, "a"), reason: "the length changed between requests")
        try index.markUnstable(key: key(show, "b"), reason: inherited)
        #expect(index.feedsWithUnstableEpisodes(notCounting: inherited) == [stitching.feedID])
        // An inherited mark alone is no evidence: clearing the episode's own
        // (its enclosure moved) leaves the show unmarked.
        try index.markUnstable(key: key(show, "a"), reason: nil)
        #expect(index.feedsWithUnstableEpisodes(notCounting: inherited) == [])
        try index.markUnstable(key: key(other, "c"), reason: "the ETag vanished between requests")
        #expect(index.feedsWithUnstableEpisodes(notCounting: inherited) == [plain.feedID])
    }
}
