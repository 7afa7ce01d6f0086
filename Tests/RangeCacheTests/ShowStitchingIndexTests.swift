import Foundation
import Logging
import RangeCache
import Testing

/// `CacheIndex.showHasUnstableEpisode(key:)`: whether an episode of the
/// same feed is marked unstable (docs/DESIGN.md, "A show that stitches").
@Suite struct ShowStitchingIndexTests {
    @Test func aMarkOnOneEpisodeIsSeenFromItsShowOnly() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ShowStitchingIndexTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let index = try CacheIndex(directory: directory.path + "/cache", logger: Logger(label: "test"))
        let show = "https://stitching.example/feed.xml", other = "https://plain.example/feed.xml"
        let key = { (feed: String, id: String) in CacheIndex.episodeKey(feedURL: feed, identity: id) }
        _ = try index.register(feedURL: show, episodes: [(key(show, "a"), "https://s/a.mp3"), (key(show, "b"), "https://s/b.mp3")])
        _ = try index.register(feedURL: other, episodes: [(key(other, "c"), "https://p/c.mp3")])
        #expect(!index.showHasUnstableEpisode(key: key(show, "b")))
        try index.markUnstable(key: key(show, "a"), reason: "the length changed between requests")
        #expect(index.showHasUnstableEpisode(key: key(show, "b")))
        #expect(index.showHasUnstableEpisode(key: key(show, "a")))
        #expect(!index.showHasUnstableEpisode(key: key(other, "c")), "another show is not marked")
        #expect(!index.showHasUnstableEpisode(key: "not in the index"))
        try index.markUnstable(key: key(show, "a"), reason: nil)
        #expect(!index.showHasUnstableEpisode(key: key(show, "b")), "a cleared mark is no mark")
    }
}
