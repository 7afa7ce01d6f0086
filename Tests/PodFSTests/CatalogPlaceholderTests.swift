import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache
import Testing

/// Shows listed from the last mount before they are built: the root lists
/// them without building, a show is built when looked into, and keeps its
/// name, inode and place.
@Suite struct CatalogPlaceholderTests {
    // MARK: - Helpers

    private static func feed(_ title: String) throws -> ParsedFeed {
        let document = """
            <rss version="2.0"><channel><title>\(title)</title>
            <item><title>One</title><guid>1</guid><enclosure url="https://cdn.example/\(title).mp3"/></item>
            </channel></rss>
            """
        return try FeedParser.parse(Array(document.utf8), baseURL: "https://feeds.example/")
    }

    private static let urls = ["https://a.example/feed", "https://b.example/feed", "https://c.example/feed"]

    private func withIndex(_ body: (CacheIndex, Logger) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-placeholders-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        try body(try CacheIndex(directory: directory, logger: logger), logger)
    }

    // MARK: - Tests

    @Test func theRootListsPlaceholdersAndAShowIsBuiltWhenLookedInto() throws {
        try withIndex { index, logger in
            let titles = ["Alpha", "Beta", "Gamma"]
            let first = try Catalog(
                feeds: zip(Self.urls, titles).map { (url: $0, feed: try Self.feed($1)) }, index: index, logger: logger)
            let saved = first.placeholdersToSave
            #expect(saved.map(\.name) == titles)

            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let built = Locked<[String]>([])
            catalog.list(saved) { url in
                built.withLock { $0.append(url) }
                // The feed's title changed meanwhile: the folder keeps its name.
                _ = try? catalog.add([(url: url, feed: try! Self.feed("Renamed"))])
            }
            let listed = catalog.children(of: Catalog.rootInode) ?? []
            // `Latest.m3u` is always listed, after the shows.
            #expect(listed.map(\.name) == titles + ["Latest.m3u"])
            #expect(listed.map(\.inode) == saved.map(\.inode) + [Catalog.latestPlaylistInode])
            #expect(built.withLock { $0 }.isEmpty, "listing the root builds nothing")

            guard case .show(let show) = catalog.lookup(parent: Catalog.rootInode, name: "Beta") else {
                Issue.record("looking into a placeholder builds its show")
                return
            }
            #expect(built.withLock { $0 } == [Self.urls[1]])
            #expect(show.name == "Beta" && show.inode == saved[1].inode)
            #expect(show.episodes.count == 1)
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == titles + ["Latest.m3u"], "it keeps its place")
            #expect(catalog.placeholderURLs == [Self.urls[0], Self.urls[2]])

            // Reading the folder of another placeholder by inode builds it too.
            #expect(catalog.children(of: saved[2].inode)?.isEmpty == false)
            #expect(built.withLock { $0 } == [Self.urls[1], Self.urls[2]])
            #expect(catalog.placeholdersToSave.map(\.name) == titles)
        }
    }

    @Test func aPlaceholderWithoutAKeptCopyIsDroppedAndItsNameFreed() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            catalog.list([Catalog.Placeholder(url: Self.urls[0], name: "Alpha", inode: 77, modificationTime: 0)]) { url in
                catalog.dropPlaceholder(url: url)
            }
            #expect(catalog.lookup(parent: Catalog.rootInode, name: "Alpha") == nil)
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Latest.m3u"])
            try catalog.add([(url: Self.urls[1], feed: try Self.feed("Alpha"))])
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Alpha", "Latest.m3u"])
        }
    }
}
