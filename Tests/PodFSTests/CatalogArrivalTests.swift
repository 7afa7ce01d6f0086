import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache
import Testing

/// Shows listed on arrival (`Catalog.listArrived`): a feed new to the
/// mount is in the root before it is built, under the name, inode and time
/// its build gives it, and the build changes none of them.
@Suite struct CatalogArrivalTests {
    // MARK: - Helpers

    private static func feed(_ title: String, dates: [String] = ["Mon, 02 Nov 2026 10:00:00 GMT"]) throws -> ParsedFeed {
        let items = dates.enumerated().map { position, date in
            "<item><title>E\(position)</title><guid>\(position)</guid><pubDate>\(date)</pubDate>"
                + "<enclosure url=\"https://cdn.example/\(title)/\(position).mp3\" length=\"1000\" type=\"audio/mpeg\"/></item>"
        }
        let document = "<rss version=\"2.0\"><channel><title>\(title)</title>\(items.joined())</channel></rss>"
        return try FeedParser.parse(Array(document.utf8), baseURL: "https://feeds.example/")
    }

    private func withIndex(_ body: (CacheIndex, Logger) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-arrivals-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        try body(try CacheIndex(directory: directory, logger: logger), logger)
    }

    // MARK: - Tests

    @Test func aFeedThatArrivesIsListedAndItsBuildKeepsNameInodeAndTime() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let url = "https://a.example/feed"
            let feed = try Self.feed("Alpha", dates: ["Mon, 02 Nov 2026 10:00:00 GMT", "Sun, 01 Nov 2026 10:00:00 GMT"])
            let built = Locked<[String]>([])
            catalog.list([]) { urls in
                built.withLock { $0.append(contentsOf: urls) }
                _ = try? catalog.add(urls.map { (url: $0, feed: feed) })
            }
            let placeholder = try #require(try catalog.listArrived(url: url, feed: feed))
            #expect(placeholder.name == "Alpha")
            #expect(placeholder.modificationTime == FeedDate.parse("Mon, 02 Nov 2026 10:00:00 GMT"))
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Alpha", "Latest.m3u"])
            #expect(catalog.showFolderCount == 1)
            #expect(built.withLock { $0 }.isEmpty, "listing the root builds nothing")
            // Listed once: a second arrival of the same feed is the caller's to build.
            #expect(try catalog.listArrived(url: url, feed: feed) == nil)

            guard case .show(let show) = catalog.lookup(parent: Catalog.rootInode, name: "Alpha") else {
                Issue.record("looking into a show listed on arrival builds it")
                return
            }
            #expect(built.withLock { $0 } == [url])
            #expect(show.inode == placeholder.inode)
            #expect(show.modificationTime == placeholder.modificationTime)
            #expect(show.episodes.count == 2)
            #expect(catalog.placeholderURLs.isEmpty)
            // Built: it has its show, so it is not listed again.
            #expect(try catalog.listArrived(url: url, feed: feed) == nil)
        }
    }

    @Test func aPathIntoAShowNotBuiltYetBuildsIt() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let url = "https://a.example/feed"
            let feed = try Self.feed("Alpha")
            catalog.list([]) { urls in _ = try? catalog.add(urls.map { (url: $0, feed: feed) }) }
            let placeholder = try #require(try catalog.listArrived(url: url, feed: feed))
            // What a player opening a saved path asks, after `ls` of the root.
            guard case .episode(let episode) = catalog.lookup(parent: placeholder.inode, name: "2026-11-02 E0.mp3")
            else {
                Issue.record("a name inside a show listed on arrival is found")
                return
            }
            #expect(episode.url == "https://cdn.example/Alpha/0.mp3")
            #expect(catalog.placeholderURLs.isEmpty)
        }
    }

    @Test func aShowThatArrivesTakesANameNoShowOrPlaceholderHas() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            _ = try catalog.update(url: "https://a.example/feed", feed: try Self.feed("Same"))
            let arrived = try #require(try catalog.listArrived(url: "https://b.example/feed", feed: try Self.feed("Same")))
            #expect(arrived.name == "Same (2)")
            let third = try #require(try catalog.listArrived(url: "https://c.example/feed", feed: try Self.feed("Same")))
            #expect(third.name == "Same (3)")
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Same", "Same (2)", "Same (3)", "Latest.m3u"])
        }
    }

    @Test func anUnsubscribedFeedIsNotListedOnArrival() throws {
        try withIndex { index, logger in
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let url = "https://a.example/feed"
            _ = try #require(try catalog.listArrived(url: url, feed: try Self.feed("Alpha")))
            #expect(catalog.remove(url: url)?.name == "Alpha")
            #expect(try catalog.listArrived(url: url, feed: try Self.feed("Alpha")) == nil)
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Latest.m3u"])
        }
    }
}
