@testable import FUSEBridge
import Feeds
import Foundation
import Logging
@testable import PodFS
@testable import ReadRules
import RangeCache
import Testing

/// Numbers from outside, from the feed's bytes to the `stat` the kernel
/// gets: nothing on that path traps, and what a file shows is in range.
@Suite struct ExtremeNumberTests {
    // MARK: - Fixtures

    private static let lengths = [
        "0", "1", "2147483648", "9007199254740992", "9223372036854775807", "9223372036854775808",
        "18446744073709551616", "9999999999999999999999", "-5", "1e30", "0x10", "",
    ]

    private static let dates = [
        "Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT",
        "Tue, 19 Jan 2038 03:14:08 GMT", "Sun, 07 Feb 2106 06:28:16 GMT", "99999999999", "-1",
    ]

    private static var feed: [UInt8] {
        var items = ""
        for (index, length) in lengths.enumerated() {
            items += """
                <item><title>E\(index)</title><guid>g\(index)</guid><pubDate>\(dates[index % dates.count])</pubDate>
                <itunes:duration>-3:-61:99</itunes:duration><itunes:episode>\(length)</itunes:episode>
                <enclosure url="https://x.example/\(index).mp3" length="\(length)" type="audio/mpeg"/></item>

                """
        }
        return Array("""
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
            <title>Extremes</title><lastBuildDate>Mon, 01 Jan 0001 00:00:00 GMT</lastBuildDate>
            \(items)</channel></rss>
            """.utf8)
    }

    // MARK: - Tests

    @Test func blockCountsRoundUpWithoutOverflow() {
        func blocks(_ size: Int64) -> Int64 {
            Attributes(inode: 1, kind: .regularFile, permissions: 0o444, size: size, modificationTime: 0).blockCount
        }
        #expect(blocks(0) == 0)
        #expect(blocks(1) == 1)
        #expect(blocks(512) == 1)
        #expect(blocks(513) == 2)
        #expect(blocks(-5) == 0)
        #expect(blocks(Int64.max) == Int64.max / 512 + 1)
        #expect(blocks(Int64.min) == 0)
    }

    @Test func sumsHoldAtTheTopInsteadOfTrapping() {
        #expect(Int64.max.saturatingAdding(1) == .max)
        #expect(Int64.min.saturatingAdding(-1) == .min)
        #expect(Int64(40).saturatingAdding(2) == 42)
    }

    @Test func readPlansHoldAtTheEndOfWhatAnInt64Can() {
        let top = Int64.max
        #expect(ReadPlan.end(offset: top - 10, size: 4_096, length: top) == top)
        #expect(ReadPlan.widenedEnd(of: (top - 4_096)..<top, window: 1 << 20, length: top) == top)
        #expect(ReadPlan.readAheadEnd(from: top - 1, window: 1 << 26, length: top, nextCovered: top) == top)
        #expect(ReadPlan.readAheadTarget(window: top, maximumWindow: 1, outruns: true) == (top, top))
    }

    @Test func aFeedOfExtremesGivesFilesInRange() throws {
        let scratch = try TemporaryIndex("extremes")
        defer { scratch.remove() }
        let (index, logger) = (scratch.index, scratch.logger)
        let parsed = try FeedParser.parse(Self.feed, baseURL: "https://x.example/feed.xml")
        let catalog = try Catalog(feeds: [(url: "https://x.example/feed.xml", feed: parsed)], index: index, logger: logger)
        let show = try #require(catalog.shows.first)
        #expect(show.episodes.count == Self.lengths.count)
        #expect(FeedDate.plausibleRange.contains(show.modificationTime))
        for episode in show.episodes {
            let attributes = episode.attributes
            #expect((0...(Int64(1) << 40)).contains(attributes.size), "\(episode.name): \(attributes.size)")
            #expect(FeedDate.plausibleRange.contains(attributes.modificationTime), "\(episode.name)")
            let st = makeStat(attributes)
            #expect(Int64(st.st_size) == attributes.size)
            #expect(st.st_blocks == Int(attributes.blockCount))
        }
        let sizes = show.episodes.map(\.attributes.size)
        #expect(sizes.filter { $0 > 0 } == [1, 2_147_483_648], "only the plain, plausible lengths are shown: \(sizes)")
    }
}
