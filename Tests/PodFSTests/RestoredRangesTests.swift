import Foundation
import Logging
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Ranges an index lists with no length (no podfs writes them; an index
/// edited by hand) are not served, and the first flush of the mount that
/// adopts the episode makes the index forget them, with no file to sync.
@Suite struct RestoredRangesTests {
    /// A source that is never asked: nothing here fetches.
    private struct NoSource: RangeSource {
        func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
            Issue.record("nothing is fetched")
        }
    }

    @Test func rangesWithoutALengthAreForgottenByTheFirstFlush() throws {
        let scratch = try TemporaryIndex("restored")
        defer { scratch.remove() }
        let (index, logger) = (scratch.index, scratch.logger)
        _ = try index.register(feeds: [(feedURL: "http://o/feed.xml", episodes: [("k", "http://o/a.mp3")])])
        try index.commitRanges([(key: "k", ranges: [0..<100])])
        let record = try #require(try index.episode(key: "k"))
        #expect(record.length == nil && record.ranges == [0..<100], "the index as edited by hand")
        let episode = Episode(
            inode: 7, parent: 1, key: "k", url: "http://o/a.mp3", guid: nil, name: "a.mp3", modificationTime: 0,
            feedLength: 1_000, record: record)
        #expect(episode.state.withLock { $0.present.isEmpty }, "not served")
        let reader = EpisodeReader(index: index, source: NoSource(), logger: logger)
        reader.adopt([episode])
        reader.flush()
        #expect(try index.episode(key: "k")?.ranges == [], "forgotten, although no file was ever opened")
    }
}
