import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache
import Testing
import ReadRules

/// Feeds that move: a permanent redirect or an `itunes:new-feed-url` that
/// leads to a feed is remembered; the feed keeps its own URL for its kept
/// copy (and so its folder and cache).
@Suite struct FeedMoveTests {
    // MARK: - Helpers

    /// Serves a body per URL, with the move a redirect chain would report.
    private final class Web: FeedSource {
        let pages = Locked<[String: (body: String, movedTo: String?)]>([:])
        let asked = Locked<[String]>([])

        func fetchFeed(url: String) throws(FetchError) -> [UInt8] { [] }

        func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
            try fetchFeed(url: url, validators: validators, subscribedAs: url).response
        }

        func fetchFeed(url: String, validators: FeedValidators?, subscribedAs: String) throws(FetchError) -> FeedAnswer {
            asked.withLock { $0.append(url) }
            guard let page = pages.withLock({ $0[url] }) else {
                throw FetchError(isTransient: false, isUnreachable: false, message: "HTTP 404")
            }
            return FeedAnswer(
                response: .body(Array(page.body.utf8), etag: nil, lastModified: nil), movedTo: page.movedTo)
        }
    }

    private static let old = "https://old.example/feed.xml"
    private static let new = "https://new.example/feed.xml"

    private static func feed(title: String, newFeedURL: String? = nil) -> String {
        let move = newFeedURL.map { "<itunes:new-feed-url>\($0)</itunes:new-feed-url>" } ?? ""
        return """
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
            <title>\(title)</title>\(move)
            <item><title>One</title><guid>g1</guid><enclosure url="https://cdn.example/1.mp3"/></item>
            </channel></rss>
            """
    }

    private func withLoader(_ body: (FeedLoader, Web, CacheIndex, String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-moves-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory, logger: logger)
        let web = Web()
        let loader = FeedLoader(source: web, index: index, moves: FeedMoves(directory: directory), logger: logger)
        try body(loader, web, index, directory)
    }

    // MARK: - Tests

    @Test func aPermanentRedirectIsRememberedAndTheKeptCopyStaysUnderTheOldURL() throws {
        try withLoader { loader, web, index, directory in
            web.pages.withLock { $0[Self.old] = (Self.feed(title: "Moved"), movedTo: Self.new) }
            guard case .updated(let feed, _) = loader.refresh(url: Self.old) else {
                Issue.record("the feed loads through its redirect")
                return
            }
            #expect(feed.title == "Moved")
            let kept = try index.feedBody(url: Self.old)
            #expect(kept != nil, "kept under the URL it was subscribed with")
            #expect(FeedMoves(directory: directory).location(of: Self.old) == Self.new, "remembered on disk")
            web.pages.withLock { $0[Self.new] = (Self.feed(title: "Moved again"), movedTo: nil) }
            _ = loader.refresh(url: Self.old)
            #expect(web.asked.withLock { $0 } == [Self.old, Self.new], "asked at the new URL from then on")
        }
    }

    @Test func aTemporaryRedirectIsNotAMove() throws {
        try withLoader { loader, web, _, directory in
            // A 302 or 307 reports no move (HTTPResponseHead.permanentURL).
            web.pages.withLock { $0[Self.old] = (Self.feed(title: "Here"), movedTo: nil) }
            _ = loader.refresh(url: Self.old)
            _ = loader.refresh(url: Self.old)
            #expect(web.asked.withLock { $0 } == [Self.old, Self.old])
            #expect(FeedMoves(directory: directory).location(of: Self.old) == Self.old)
        }
    }

    @Test func aNewFeedURLThatGivesAFeedIsFollowedAndRemembered() throws {
        try withLoader { loader, web, index, directory in
            web.pages.withLock {
                $0[Self.old] = (Self.feed(title: "Old home", newFeedURL: Self.new), movedTo: nil)
                $0[Self.new] = (Self.feed(title: "New home"), movedTo: nil)
            }
            guard case .updated(let feed, _) = loader.refresh(url: Self.old) else {
                Issue.record("the feed loads")
                return
            }
            #expect(feed.title == "New home")
            #expect(FeedMoves(directory: directory).location(of: Self.old) == Self.new)
            let kept = try index.feedBody(url: Self.old).map { String(decoding: $0.body, as: UTF8.self) }
            #expect(kept?.contains("New home") == true, "the new feed is kept under the old URL")
        }
    }

    @Test func aNewFeedURLThatGivesNoFeedIsNotFollowed() throws {
        try withLoader { loader, web, _, directory in
            web.pages.withLock {
                $0[Self.old] = (Self.feed(title: "Old home", newFeedURL: Self.new), movedTo: nil)
                $0[Self.new] = ("<html>not a feed</html>", movedTo: nil)
            }
            guard case .updated(let feed, _) = loader.refresh(url: Self.old) else {
                Issue.record("the old feed still loads")
                return
            }
            #expect(feed.title == "Old home")
            #expect(FeedMoves(directory: directory).location(of: Self.old) == Self.old)
            web.pages.withLock { $0[Self.new] = nil }
            _ = loader.refresh(url: Self.old)
            #expect(FeedMoves(directory: directory).location(of: Self.old) == Self.old, "a 404 is no move either")
        }
    }

    @Test func theParserReadsNewFeedURLAndPodcastGUID() throws {
        let document = """
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
                 xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>T</title>
            <itunes:new-feed-url> https://new.example/feed.xml </itunes:new-feed-url>
            <podcast:guid>917393e3-1b1e-5cef-ace4-edaa54e1f810</podcast:guid>
            </channel></rss>
            """
        let feed = try FeedParser.parse(Array(document.utf8), baseURL: Self.old)
        #expect(feed.newFeedURL == Self.new)
        #expect(feed.showGUID == "917393e3-1b1e-5cef-ace4-edaa54e1f810")
        let bad = document.replacingOccurrences(of: "https://new.example/feed.xml", with: "javascript:alert(1)")
        #expect(try FeedParser.parse(Array(bad.utf8), baseURL: Self.old).newFeedURL == nil)
    }
}
