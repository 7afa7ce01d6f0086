import Foundation
import Logging
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// `StitchingShows`: the shows whose new episodes take the mark of a
/// stitching host before their first byte (docs/DESIGN.md, "A show that
/// stitches"), read from the index once and added to as marks are made.
@Suite struct StitchingShowsTests {
    @Test func theIndexIsReadOnceAndThisMountsMarksAreAdded() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("StitchingShowsTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let index = try CacheIndex(directory: directory.path + "/cache", logger: Logger(label: "test"))
        let feed = "https://stitching.example/feed.xml"
        let key = CacheIndex.episodeKey(feedURL: feed, identity: "a")
        let registered = try index.register(feedURL: feed, episodes: [(key, "https://s/a.mp3")])
        try index.markUnstable(key: key, reason: StitchReason.lengthChanged(before: nil, after: nil).code)
        let show = Catalog.inode(.show, id: registered.feedID)
        let shows = StitchingShows(index: index, logger: Logger(label: "test"))
        #expect(shows.contains(show), "read from the index")
        // Read once: a mark cleared in the index later is this mount's
        // still, as the episodes streamed whole meanwhile are.
        try index.markUnstable(key: key, reason: nil)
        #expect(shows.contains(show))
        let other = show + 1
        #expect(!shows.contains(other))
        shows.insert(other)
        #expect(shows.contains(other), "a mark of this mount")
        // A new mount reads the index again.
        #expect(!StitchingShows(index: index, logger: Logger(label: "test")).contains(show))
    }
}
