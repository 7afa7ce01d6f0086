import Feeds
import Testing

/// Enclosure, image and transcript URLs: absolute http(s), complete, with no
/// character a request line could be confused by.
@Suite struct FeedURLTests {
    // MARK: - Rejections

    @Test func resolvedURLsCarryNoControlCharactersOrBackslashes() {
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{1}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{7F}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{85}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{0}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example\\a.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\\b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http:///a.mp3", base: "") == nil)
    }

    @Test(arguments: [
        "ftp://x.example/a.mp3", "file:///etc/passwd", "javascript:alert(1)", "data:audio/mpeg;base64,AAAA",
        "gopher://x.example/", "mailto:a@x.example", "x.example/a.mp3", "", "   ", "http://", "https://:80/a",
    ])
    func rejectsWhatIsNotAnAbsoluteHTTPURL(_ raw: String) {
        #expect(FeedURL.resolveHTTP(raw, base: "") == nil, "\(raw)")
    }

    @Test(arguments: [
        "http://x.example:99999/a.mp3", "http://x.example:0/a.mp3", "http://x.example:8o/a.mp3",
        "http://x.example:-1/a.mp3", "http://[::1/a.mp3", "http://[::1]x/a.mp3", "http://[zz::1]/a.mp3",
        "http://exa mple.example/a.mp3", "http://exa%20mple.example/a.mp3", "http://.x.example/a.mp3",
        "http://x..example/a.mp3", "http://x.example$/a.mp3", "http://bücher.example/a.mp3",
    ])
    func rejectsBadHostsAndPorts(_ raw: String) {
        #expect(FeedURL.resolveHTTP(raw, base: "") == nil, "\(raw)")
    }

    @Test func rejectsURLsThatCarryAReplacementCharacterOrNoncharacter() {
        // What the parser puts where a document had a NUL: never glued over.
        let marker = String(Character(Unicode.Scalar(UInt32(0xFDD0))!))
        #expect(FeedURL.resolveHTTP("http://x.example/a\(marker)b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{FFFD}.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/\u{10FFFF}", base: "") == nil)
    }

    // MARK: - Escapes

    @Test func percentEncodesWhatBrowsersEncode() {
        #expect(FeedURL.resolveHTTP("http://x.example/ä b.mp3", base: "") == "http://x.example/%C3%A4%20b.mp3")
        #expect(
            FeedURL.resolveHTTP("http://x.example/a|b{c}\"d\".mp3", base: "")
                == "http://x.example/a%7Cb%7Bc%7D%22d%22.mp3")
        #expect(FeedURL.resolveHTTP("http://x.example/100%.mp3", base: "") == "http://x.example/100%25.mp3")
        #expect(FeedURL.resolveHTTP("http://x.example/a%2Fb%20c.mp3", base: "") == "http://x.example/a%2Fb%20c.mp3")
        #expect(FeedURL.resolveHTTP("https://op3.dev/e,pg=1/x.mp3", base: "") == "https://op3.dev/e,pg=1/x.mp3")
    }

    @Test func keepsQueriesFragmentsPortsUserInfoAndIPLiterals() {
        for url in [
            "https://dts.podtrac.com/redirect.mp3/x.example/a.mp3?dest-id=171666&k=GBM99S&s=3",
            "http://x.example:8080/a.mp3#t=10", "http://user:pass@x.example/private.mp3",
            "http://127.0.0.1:8000/a.mp3", "http://[2001:db8::1]:8443/a.mp3", "http://x_y.example/a.mp3",
            "http://www.podtrac.com/pts/redirect.mp3?http://www.taverncast.com/shows/geekistry-2.mp3",
        ] {
            #expect(FeedURL.resolveHTTP(url, base: "") == url, "\(url)")
        }
    }

    @Test func lowercasesTheSchemeAndTrimsWhiteSpace() {
        #expect(FeedURL.resolveHTTP(" \n\tHTTPS://x.example/A.mp3 \r\n", base: "") == "https://x.example/A.mp3")
    }

    // MARK: - Resolving

    @Test func resolvesRelativeURLsAgainstTheFeedURL() {
        let base = "https://example.org/podcast/feed.xml?page=2"
        #expect(FeedURL.resolveHTTP("ep1.mp3", base: base) == "https://example.org/podcast/ep1.mp3")
        #expect(FeedURL.resolveHTTP("../ep2.mp3", base: base) == "https://example.org/ep2.mp3")
        #expect(FeedURL.resolveHTTP("/media/ep3.mp3", base: base) == "https://example.org/media/ep3.mp3")
        #expect(FeedURL.resolveHTTP("//cdn.example.net/ep4.mp3", base: base) == "https://cdn.example.net/ep4.mp3")
        #expect(FeedURL.resolveHTTP("?page=3", base: base) == "https://example.org/podcast/feed.xml?page=3")
        // A relative URL against a non-http feed location has no http form.
        #expect(FeedURL.resolveHTTP("ep1.mp3", base: "file:///tmp/feed.xml") == nil)
        #expect(FeedURL.resolveHTTP("ep1.mp3", base: "") == nil)
    }
}
