import Testing

@testable import podfs

/// SOURCE arguments: a URL of another scheme is named as such (not read as
/// a file path), the podcast links of web pages are read as http feeds,
/// and a URL without a host is refused with an example.
@Suite struct FeedSourcesTests {
    private static func refusal(_ source: String) -> String? {
        do {
            _ = try FeedSources.urls([source])
            return nil
        } catch {
            return error.message
        }
    }

    @Test func otherSchemesAreNamedNotMangledIntoPaths() throws {
        #expect(FeedSources.absolute(["ftp://example.org/feed.xml"]) == ["ftp://example.org/feed.xml"])
        let message = try #require(Self.refusal("ftp://example.org/feed.xml"))
        #expect(message.contains("uses ftp://; podfs reads feeds over http and https only"), "\(message)")
        #expect(FeedSources.scheme(of: "/home/me/feeds.opml") == nil)
        #expect(FeedSources.scheme(of: "./a://b") == nil)
        #expect(FeedSources.scheme(of: "HTTPS://x") == "https")
    }

    @Test func podcastLinksAreReadAsHTTPFeeds() throws {
        #expect(try FeedSources.urls(["itpc://example.org/feed.xml"]) == ["http://example.org/feed.xml"])
        #expect(try FeedSources.urls(["feed://example.org/rss"]) == ["http://example.org/rss"])
    }

    @Test func aURLWithoutAHostIsRefused() throws {
        let message = try #require(Self.refusal("http://"))
        #expect(message.contains("is not a feed URL (it names no host)"), "\(message)")
        #expect(try FeedSources.urls(["https://example.org/feed.xml"]) == ["https://example.org/feed.xml"])
    }
}
