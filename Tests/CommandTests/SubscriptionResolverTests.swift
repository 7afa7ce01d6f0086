import Feeds
import Foundation
import HTTPClient
import Testing

@testable import podfs

/// How a SOURCE given to `podfs subscribe` becomes a feed, with the fetches
/// answered from memory: which URLs are asked, under whose zone, and what
/// the user is told when there is no feed.
@Suite struct SubscriptionResolverTests {
    // MARK: - Helpers

    private static let feedBytes = Array(
        """
        <?xml version="1.0"?><rss version="2.0"><channel><title>The Show</title>
        <item><title>One</title><guid>1</guid><enclosure url="http://example.org/1.mp3" length="10" type="audio/mpeg"/></item>
        </channel></rss>
        """.utf8)

    /// A web of documents by URL; records what was asked, and as whom.
    private final class Web: @unchecked Sendable {
        var documents: [String: [UInt8]] = [:]
        var zone: AddressZone? = .loopback
        var loads: [String] = []
        var fetches: [(url: String, issuer: URLIssuer)] = []

        var resolver: SubscriptionResolver {
            SubscriptionResolver(
                load: { url in
                    self.loads.append(url)
                    guard let body = self.documents[url] else { return .failed(reason: "the origin answered HTTP 404") }
                    do {
                        return .feed(try FeedParser.parse(body, baseURL: url))
                    } catch {
                        return .notAFeed(reason: "the feed does not parse: \(error)")
                    }
                },
                fetch: { url, issuer in
                    self.fetches.append((url, issuer))
                    guard let body = self.documents[url] else { return .failed(reason: "the origin answered HTTP 404") }
                    return .body(body, zone: self.zone)
                })
        }
    }

    private static func page(_ head: String) -> [UInt8] {
        Array("<!DOCTYPE html><html><head><title>x</title>\(head)</head><body>hello</body></html>".utf8)
    }

    // MARK: - Tests

    @Test func aFeedURLIsLoadedOnceAndNothingElseIsAsked() throws {
        let web = Web()
        web.documents["http://a.example/feed.xml"] = Self.feedBytes
        let found = try web.resolver.resolve("http://a.example/feed.xml").get()
        #expect(found.url == "http://a.example/feed.xml")
        #expect(found.feed.title == "The Show")
        #expect(found.page == nil)
        #expect(web.loads == ["http://a.example/feed.xml"])
        #expect(web.fetches.isEmpty)
    }

    @Test func aPageIsFollowedToTheFeedItLinksUnderThePagesZone() throws {
        let web = Web()
        web.zone = .global
        web.documents["http://a.example/show"] = Self.page(
            #"<link rel="stylesheet" href="/s.css"><link rel="alternate" type="application/rss+xml" href="/feed.xml">"#)
        web.documents["http://a.example/feed.xml"] = Self.feedBytes
        let found = try web.resolver.resolve("http://a.example/show").get()
        #expect(found.url == "http://a.example/feed.xml")
        #expect(found.page == "http://a.example/show")
        #expect(web.fetches.map(\.url) == ["http://a.example/show", "http://a.example/feed.xml"])
        guard case .user = web.fetches[0].issuer else {
            Issue.record("the page the user typed is fetched as the user's")
            return
        }
        guard case .server(.global) = web.fetches[1].issuer else {
            Issue.record("a link is fetched under the zone of the page's server")
            return
        }
        #expect(web.loads == ["http://a.example/show", "http://a.example/feed.xml"])
    }

    @Test func aPageThatLinksNoFeedSaysSo() {
        let web = Web()
        web.documents["http://a.example/show"] = Self.page(#"<link rel="icon" href="/i.png">"#)
        guard case .failure(let failure) = web.resolver.resolve("http://a.example/show") else {
            Issue.record("a page with no feed link adds nothing")
            return
        }
        #expect(failure.description.contains("http://a.example/show is a web page that links no feed"))
    }

    @Test func aPageWhoseLinksFailNamesEachLinkAndWhy() {
        let web = Web()
        web.documents["http://a.example/show"] = Self.page(
            #"<link rel="alternate" type="application/rss+xml" href="/gone.xml"><link rel="alternate" type="application/atom+xml" href="/page2">"#)
        web.documents["http://a.example/page2"] = Self.page("")
        guard case .failure(let failure) = web.resolver.resolve("http://a.example/show") else {
            Issue.record("no feed can be found")
            return
        }
        #expect(failure.description.contains("links no feed that loads"))
        #expect(failure.description.contains("http://a.example/gone.xml: the origin answered HTTP 404"))
        #expect(failure.description.contains("http://a.example/page2: not a feed"))
    }

    @Test func aBrokenFeedIsNotTakenForAPage() {
        let web = Web()
        web.documents["http://a.example/feed.xml"] = Array("<rss><channel><title>cut off".utf8)
        guard case .failure(let failure) = web.resolver.resolve("http://a.example/feed.xml") else {
            Issue.record("a feed that does not parse adds nothing")
            return
        }
        #expect(failure.description.hasPrefix("http://a.example/feed.xml is not a feed: the feed does not parse"))
    }

    @Test func aFetchThatFailsIsReportedWithoutASecondRequest() {
        let web = Web()
        guard case .failure(let failure) = web.resolver.resolve("http://a.example/missing.xml") else {
            Issue.record("a 404 adds nothing")
            return
        }
        #expect(failure.description == "http://a.example/missing.xml: the origin answered HTTP 404")
        #expect(web.fetches.isEmpty)
    }

    @Test func aTokenInTheURLIsNotShownInTheMessage() {
        let web = Web()
        guard case .failure(let failure) = web.resolver.resolve("http://alice:secret@a.example/f.xml?token=abc") else {
            Issue.record("a 404 adds nothing")
            return
        }
        #expect(!failure.description.contains("secret"))
        #expect(!failure.description.contains("abc"))
    }

    @Test func aNameOrAURLNamesASubscription() {
        let urls = ["http://a.example/feed.xml", "https://b.example/rss"]
        let names = ["Show B": "https://b.example/rss"]
        #expect(SubscriptionMatch.url(of: "http://a.example/feed.xml", among: urls, names: names) == urls[0])
        #expect(SubscriptionMatch.url(of: "  feed://a.example/feed.xml ", among: urls, names: names) == urls[0])
        #expect(SubscriptionMatch.url(of: "Show B", among: urls, names: names) == urls[1])
        #expect(SubscriptionMatch.url(of: "Show C", among: urls, names: names) == nil)
        #expect(SubscriptionMatch.url(of: "http://c.example/x", among: urls, names: names) == nil)
    }
}
