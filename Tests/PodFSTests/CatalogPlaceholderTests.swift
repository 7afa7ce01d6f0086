import Feeds
import Foundation
import Locking
import Logging
@testable import PodFS
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

    /// A feed whose one episode is `hours` old, so `Latest.m3u` lists it.
    private static func recentFeed(_ title: String, hours: Int) throws -> ParsedFeed {
        try recentFeed(title, ages: [hours])
    }

    /// A feed of episodes `ages` hours old (the first titled "New ...").
    private static func recentFeed(_ title: String, ages: [Int], now: Date = Date()) throws -> ParsedFeed {
        let formatter = DateFormatter()
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let items = ages.enumerated().map { position, hours in
            let date = formatter.string(from: now.addingTimeInterval(-3600 * Double(hours)))
            let name = position == 0 ? "New \(title)" : "\(title) \(position)"
            return """
                <item><title>\(name)</title><guid>\(position)</guid><pubDate>\(date)</pubDate>
                <enclosure url="https://cdn.example/\(title)/\(position).mp3"/></item>
                """
        }
        let document = """
            <rss version="2.0"><channel><title>\(title)</title>
            \(items.joined(separator: "\n"))
            </channel></rss>
            """
        return try FeedParser.parse(Array(document.utf8), baseURL: "https://feeds.example/")
    }

    private static func text(_ playlist: Playlist) -> String {
        String(decoding: playlist.content, as: UTF8.self)
    }

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
            catalog.list(saved) { urls in
                built.withLock { $0.append(contentsOf: urls) }
                // The feed's title changed meanwhile: the folder keeps its name.
                _ = try? catalog.add(urls.map { (url: $0, feed: try! Self.feed("Renamed")) })
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
            catalog.list([Catalog.Placeholder(url: Self.urls[0], name: "Alpha", inode: 77, modificationTime: 0)]) { urls in
                urls.forEach { catalog.dropPlaceholder(url: $0) }
            }
            #expect(catalog.lookup(parent: Catalog.rootInode, name: "Alpha") == nil)
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Latest.m3u"])
            try catalog.add([(url: Self.urls[1], feed: try Self.feed("Alpha"))])
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Alpha", "Latest.m3u"])
        }
    }

    /// A remount lists its shows from the last mount before it builds
    /// them: `Latest.m3u` lists what they added then (saved with the show
    /// list), whole at once, and building one changes nothing the kernel
    /// was told.
    @Test func aRemountsLatestPlaylistListsItsShowsBeforeTheyAreBuilt() throws {
        try withIndex { index, logger in
            let feeds = [
                (url: Self.urls[0], feed: try Self.recentFeed("Alpha", hours: 2)),
                (url: Self.urls[1], feed: try Self.recentFeed("Beta", hours: 1)),
            ]
            let first = try Catalog(feeds: feeds, index: index, logger: logger)
            let whole = Self.text(first.latestPlaylist)
            #expect(whole.components(separatedBy: "#EXTINF").count == 3, "\(whole)")
            // Through the show list's JSON, as a remount reads it.
            let saved = try JSONDecoder().decode(
                [Catalog.Placeholder].self, from: JSONEncoder().encode(first.placeholdersToSave))

            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let built = Locked<[String]>([])
            catalog.list(saved) { urls in
                built.withLock { $0.append(contentsOf: urls) }
                _ = try? catalog.add(feeds.filter { urls.contains($0.url) })
            }
            let listed = catalog.latestPlaylist
            #expect(Self.text(listed) == whole)
            #expect(listed.modificationTime == first.latestPlaylist.modificationTime)
            #expect(!catalog.buildShowsForLatest(), "every show's part is known")
            #expect(built.withLock { $0 }.isEmpty)

            _ = catalog.lookup(parent: Catalog.rootInode, name: "Beta")
            #expect(built.withLock { $0 } == [Self.urls[1]])
            #expect(catalog.latestPlaylist === listed, "a build that adds the same makes no new playlist")

            // A show unsubscribed before it was built takes its part along.
            catalog.remove(url: Self.urls[0])
            #expect(!Self.text(catalog.latestPlaylist).contains("Alpha"))
            #expect(Self.text(catalog.latestPlaylist).contains("Beta/"))
        }
    }

    /// The show list keeps what each show adds to `Latest.m3u` now and no
    /// more (the 100 newest of all shows): a show none of whose episodes
    /// is among them saves none, and the remount's playlist is the same.
    @Test func theShowListKeepsOnlyWhatTheLatestPlaylistLists() throws {
        try withIndex { index, logger in
            let feeds = [
                (url: Self.urls[0], feed: try Self.recentFeed("Alpha", ages: Array(1...120))),
                (url: Self.urls[1], feed: try Self.recentFeed("Beta", ages: [200])),
                (url: Self.urls[2], feed: try Self.recentFeed("Gamma", ages: [50, 300])),
            ]
            let first = try Catalog(feeds: feeds, index: index, logger: logger)
            let saved = first.placeholdersToSave
            #expect(saved.map { $0.latest?.count } == [99, 0, 1])

            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            catalog.list(saved) { urls in _ = try? catalog.add(feeds.filter { urls.contains($0.url) }) }
            #expect(Self.text(catalog.latestPlaylist) == Self.text(first.latestPlaylist))
            #expect(!catalog.buildShowsForLatest())
        }
    }

    /// Episodes of the same time keep the root's order of their shows,
    /// whatever order the shows are built in: the playlist a remount lists
    /// before building is the one it has after.
    @Test func tiesKeepTheRootsOrderWhateverOrderShowsAreBuiltIn() throws {
        try withIndex { index, logger in
            let now = Date()
            let feeds = try ["Alpha", "Beta", "Gamma"].enumerated().map { position, title in
                (url: Self.urls[position], feed: try Self.recentFeed(title, ages: [5], now: now))
            }
            let first = try Catalog(feeds: feeds, index: index, logger: logger)
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            catalog.list(first.placeholdersToSave) { urls in
                _ = try? catalog.add(feeds.filter { urls.contains($0.url) })
            }
            let listed = catalog.latestPlaylist
            #expect(Self.text(listed) == Self.text(first.latestPlaylist))
            for name in ["Gamma", "Alpha", "Beta"] {
                _ = catalog.lookup(parent: Catalog.rootInode, name: name)
                #expect(catalog.latestPlaylist === listed, "after \(name) was built")
            }
        }
    }

    /// A placeholder whose kept copy gives no show is dropped, and what it
    /// added to `Latest.m3u` with it.
    @Test func aDroppedPlaceholderTakesItsPartOfTheLatestPlaylistAlong() throws {
        try withIndex { index, logger in
            let first = try Catalog(
                feeds: [(url: Self.urls[0], feed: try Self.recentFeed("Alpha", hours: 2))], index: index, logger: logger)
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            catalog.list(first.placeholdersToSave) { urls in urls.forEach { catalog.dropPlaceholder(url: $0) } }
            #expect(Self.text(catalog.latestPlaylist).contains("Alpha/"))
            #expect(catalog.lookup(parent: Catalog.rootInode, name: "Alpha") == nil, "its kept copy gave nothing")
            #expect(Self.text(catalog.latestPlaylist) == "#EXTM3U\n")
        }
    }

    /// A show listed on arrival adds nothing to `Latest.m3u` until it is
    /// built: opening the playlist builds it first. Before, the playlist
    /// has the root's time, not 1970.
    @Test func aShowListedOnArrivalIsBuiltForTheLatestPlaylist() throws {
        try withIndex { index, logger in
            let feed = try Self.recentFeed("Alpha", hours: 3)
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            let built = Locked<[String]>([])
            catalog.list([]) { urls in
                built.withLock { $0.append(contentsOf: urls) }
                _ = try? catalog.add(urls.map { (url: $0, feed: feed) })
            }
            _ = try #require(try catalog.listArrived(url: Self.urls[0], feed: feed))
            #expect(Self.text(catalog.latestPlaylist) == "#EXTM3U\n")
            #expect(catalog.latestPlaylist.modificationTime > 0)

            #expect(catalog.buildShowsForLatest())
            #expect(built.withLock { $0 } == [Self.urls[0]])
            #expect(Self.text(catalog.latestPlaylist).contains("#EXTINF:-1,Alpha — New Alpha\nAlpha/"))
            #expect(!catalog.buildShowsForLatest(), "nothing left to build")
        }
    }
}
