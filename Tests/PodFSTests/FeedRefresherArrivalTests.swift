import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache
import ReadRules
import Testing

/// A feed new to the mount, fetched by a round: listed on arrival and built
/// from its kept copy when the copy was kept, built at once from the feed
/// in hand when it was not (a full disk), so it never vanishes for want of
/// a copy (docs/DESIGN.md, "Feeds"). The build is the mount's: from the
/// kept copy, dropping the placeholder when there is none.
@Suite struct FeedRefresherArrivalTests {
    // MARK: - Helpers

    /// Answers every GET with the same feed.
    private struct OneFeed: FeedSource {
        let body: [UInt8]

        func fetchFeed(url: String) throws(FetchError) -> [UInt8] { body }

        func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
            .body(body, etag: nil, lastModified: nil)
        }
    }

    /// A source that is never asked: nothing here reads an episode.
    private struct NoSource: RangeSource {
        func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
            Issue.record("nothing is fetched")
        }
    }

    /// What a round did with the feed, and the catalogue it did it to.
    private struct Round {
        let catalog: Catalog
        let index: CacheIndex
        /// The URLs the refresher listed on arrival (`onListed`).
        let listed: [String]
    }

    private static let url = "https://feeds.example/show.xml"

    private static let feed = Array(
        """
        <rss version="2.0"><channel><title>Show</title>
        <item><title>A</title><guid>a</guid><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
        <enclosure url="https://cdn.example/a.mp3" length="1000" type="audio/mpeg"/></item>
        <item><title>B</title><guid>b</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
        <enclosure url="https://cdn.example/b.mp3" length="1000" type="audio/mpeg"/></item>
        </channel></rss>
        """.utf8)

    /// Runs one round over the feed, with a cold catalogue. The loader keeps
    /// its copies in the index, or, when `keeps` is false, in the same index
    /// opened for reading only: every save of a copy fails, as on a full
    /// disk, while the catalogue registers its shows as usual.
    private func round(keeps: Bool, _ check: (Round) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-refresher-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory, logger: logger)
        let copies = keeps ? index : try CacheIndex(readingDirectory: directory, logger: logger)
        let loader = FeedLoader(source: OneFeed(body: Self.feed), index: copies, logger: logger)
        let catalog = try Catalog(feeds: [], index: index, logger: logger)
        let build: @Sendable (String) -> Void = { url in
            guard let feed = loader.kept(url: url) else {
                _ = catalog.dropPlaceholder(url: url)
                return
            }
            _ = try? catalog.add([(url: url, feed: feed)])
        }
        catalog.list([], builder: { $0.forEach(build) })
        let listed = Locked<[String]>([])
        let refresher = FeedRefresher(
            urls: [Self.url], interval: nil, loader: loader, catalog: catalog,
            reader: EpisodeReader(index: index, source: NoSource(), logger: logger),
            statusStore: FeedStatusStore(directory: directory), logger: logger,
            onListed: { url in
                listed.withLock { $0.append(url) }
                build(url)
            })
        refresher.refreshAll()
        try check(Round(catalog: catalog, index: index, listed: listed.withLock { $0 }))
    }

    // MARK: - Tests

    @Test func aFeedWhoseCopyIsKeptIsListedOnArrivalAndBuiltFromIt() throws {
        try round(keeps: true) { round throws in
            #expect(round.listed == [Self.url])
            #expect(round.catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Show", "Latest.m3u"])
            guard case .show(let show) = round.catalog.lookup(parent: Catalog.rootInode, name: "Show") else {
                Issue.record("the show built from its kept copy is in the root")
                return
            }
            #expect(show.episodes.count == 2)
        }
    }

    @Test func aFeedWhoseCopyIsNotKeptIsBuiltAtOnceAndStaysListed() throws {
        try round(keeps: false) { round throws in
            #expect(try round.index.feedBody(url: Self.url) == nil, "the copy was not kept")
            #expect(round.listed.isEmpty, "not listed for a build that would find no copy")
            #expect(round.catalog.placeholderURLs.isEmpty)
            #expect(round.catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Show", "Latest.m3u"])
            guard case .show(let show) = round.catalog.lookup(parent: Catalog.rootInode, name: "Show") else {
                Issue.record("the show built from the feed in hand is in the root")
                return
            }
            #expect(show.episodes.count == 2)
            #expect(round.catalog.children(of: show.inode)?.filter { $0.name.hasSuffix(".mp3") }.count == 2)
        }
    }
}
