import Feeds
import Foundation
import Logging
import PodFS
import RangeCache
import Testing

/// An unsubscribed show leaves the root, built or only listed, and nothing
/// but a subscription again brings it back; its files stay readable.
@Suite struct CatalogRemovalTests {
    // MARK: - Helpers

    private static func feed(_ title: String) throws -> ParsedFeed {
        let document = """
            <rss version="2.0"><channel><title>\(title)</title>
            <item><title>One</title><guid>1</guid><pubDate>\(Date().formatted(.iso8601))</pubDate>
            <enclosure url="https://cdn.example/\(title).mp3"/></item>
            </channel></rss>
            """
        return try FeedParser.parse(Array(document.utf8), baseURL: "https://feeds.example/")
    }

    private static let urls = ["https://a.example/feed", "https://b.example/feed"]

    private func withIndex(_ body: (CacheIndex, Logger) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-removal-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        try body(try CacheIndex(directory: directory, logger: logger), logger)
    }

    private static func names(_ catalog: Catalog) -> [String] {
        (catalog.children(of: Catalog.rootInode) ?? []).map(\.name)
    }

    // MARK: - Tests

    @Test func aRemovedShowLeavesTheRootAndItsFilesStayReadable() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(
                feeds: zip(Self.urls, ["Alpha", "Beta"]).map { (url: $0, feed: try Self.feed($1)) }, index: index,
                logger: logger)
            let episode = try #require(catalog.shows.first?.episodes.first)
            let removal = try #require(catalog.remove(url: Self.urls[0]))
            #expect(removal.name == "Alpha")
            #expect(Self.names(catalog) == ["Beta", "Latest.m3u"])
            #expect(catalog.lookup(parent: Catalog.rootInode, name: "Alpha") == nil)
            guard case .episode(let open) = catalog.node(episode.inode) else {
                Issue.record("an open file's inode still reads")
                return
            }
            #expect(open === episode)
            let latest = String(decoding: catalog.latestPlaylist.content, as: UTF8.self)
            #expect(!latest.contains("Alpha") && latest.contains("Beta"), "its episodes leave Latest.m3u")
            #expect(catalog.remove(url: Self.urls[0]) == nil, "gone already")
        }
    }

    @Test func aKeptCopyPassCannotBringARemovedShowBackButASubscriptionCan() throws {
        try withIndex { index, logger in
            let saved = try Catalog(
                feeds: zip(Self.urls, ["Alpha", "Beta"]).map { (url: $0, feed: try Self.feed($1)) }, index: index,
                logger: logger
            ).placeholdersToSave
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            catalog.list(saved) { _ in }
            // The background pass took its list of placeholders before the
            // unsubscribe, and builds them after it.
            let pass = catalog.placeholderURLs
            #expect(catalog.remove(url: Self.urls[0])?.show == nil, "only listed, never built")
            #expect(Self.names(catalog) == ["Beta", "Latest.m3u"])
            try catalog.add(pass.map { (url: $0, feed: try Self.feed($0 == Self.urls[0] ? "Alpha" : "Beta")) })
            #expect(Self.names(catalog) == ["Beta", "Latest.m3u"], "the removed show stays out")
            // Subscribed again: the update path brings it back.
            let change = try catalog.update(url: Self.urls[0], feed: try Self.feed("Alpha"))
            #expect(change.isNewShow)
            #expect(Self.names(catalog).sorted() == ["Alpha", "Beta", "Latest.m3u"])
        }
    }
}
