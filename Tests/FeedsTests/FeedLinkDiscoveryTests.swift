@testable import Feeds
import Testing
import TestSupport

/// Finding the feeds an HTML page links to.
@Suite struct FeedLinkDiscoveryTests {
    // MARK: - Fixtures

    static let page = "https://www.example.org/blog/post.html"

    static func links(_ html: String, base: String = page) -> [String] {
        FeedLinkDiscovery.feedLinks(inHTML: Array(html.utf8), base: base)
    }

    // MARK: - Tests

    @Test func findsRSSAndAtomLinksInDocumentOrderResolvedAgainstThePage() {
        let html = """
            <!DOCTYPE html><html><head>
            <meta charset="utf-8"><title>Blog</title>
            <link rel="stylesheet" href="/style.css">
            <link rel="alternate" type="application/rss+xml" title="RSS" href="/feed.xml">
            <LINK TYPE='application/atom+xml' HREF='atom.xml' REL='alternate'>
            <link rel="alternate" type="application/feed+json" href="/feed.json">
            <link rel="alternate" type="text/html" hreflang="fr" href="/fr/">
            <link rel=alternate type=application/rss+xml href=//cdn.example.net/podcast.rss>
            <link rel="alternate" type="application/rss+xml" href="https://other.example/feed?a=1&amp;b=2&c=3">
            <link rel="alternate" type="application/rss+xml" href="/feed.xml">
            </head><body></body></html>
            """
        #expect(
            Self.links(html) == [
                "https://www.example.org/feed.xml", "https://www.example.org/blog/atom.xml",
                "https://cdn.example.net/podcast.rss", "https://other.example/feed?a=1&b=2&c=3",
            ])
    }

    @Test func readsRelAsTokensAndTypeWithoutParametersInAnyCase() {
        let html = """
            <link rel="home  ALTERNATE" type=" Application/RSS+XML; charset=utf-8 " href="a">
            <link rel="alternates" type="application/rss+xml" href="b">
            <link rel="alternate-feed" type="application/rss+xml" href="c">
            <link rel="alternate" href="d">
            <link type="application/rss+xml" href="e">
            <link rel="alternate" type="application/rss+xml">
            <link rel="alternate\tfeed" type="application/atom+xml" href="f">
            """
        #expect(Self.links(html) == ["https://www.example.org/blog/a", "https://www.example.org/blog/f"])
    }

    @Test func honoursTheFirstBaseHrefWhereverItIs() {
        let html = """
            <link rel="alternate" type="application/rss+xml" href="feed">
            <base href="https://static.example.com/site/"><base href="https://ignored.example/">
            <link rel="alternate" type="application/rss+xml" href="/root">
            """
        #expect(Self.links(html) == ["https://static.example.com/site/feed", "https://static.example.com/root"])
        let relativeBase = "<base href=\"/sub/\"><link rel=alternate type=application/rss+xml href=x>"
        #expect(Self.links(relativeBase) == ["https://www.example.org/sub/x"])
        let unusableBase = "<base href=\"javascript:x\"><link rel=alternate type=application/rss+xml href=x>"
        #expect(Self.links(unusableBase) == ["https://www.example.org/blog/x"])
    }

    @Test func refusesLinksThatAreNotHTTP() {
        let html = """
            <link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
            <link rel="alternate" type="application/rss+xml" href="file:///etc/passwd">
            <link rel="alternate" type="application/rss+xml" href="ftp://a.example/f">
            <link rel="alternate" type="application/rss+xml" href="">
            <link rel="alternate" type="application/rss+xml" href="feed&#58;//a.example/x">
            <link rel="alternate" type="application/rss+xml" href="http://a.example/&#0;">
            """
        #expect(Self.links(html) == [])
        #expect(Self.links("<link rel=alternate type=application/rss+xml href=/x>", base: "") == [])
    }

    @Test func ignoresMarkupInCommentsScriptsAndTitles() {
        let html = """
            <head><!-- <link rel="alternate" type="application/rss+xml" href="/comment"> -->
            <script>var s = '<link rel="alternate" type="application/rss+xml" href="/script">';</script>
            <title><link rel="alternate" type="application/rss+xml" href="/title"></title>
            <style>/* <link rel=alternate type=application/rss+xml href=/style> */</style >
            <!--> <link rel="alternate" type="application/rss+xml" href="/after-abrupt-comment">
            <meta content='<link rel="alternate" type="application/rss+xml" href="/attribute">'>
            <link rel="alternate" type="application/rss+xml" title="a > b" href="/real">
            """
        #expect(
            Self.links(html) == ["https://www.example.org/after-abrupt-comment", "https://www.example.org/real"])
    }

    @Test func decodesReferencesAndDropsLineBreaksInHref() {
        let html = """
            <link rel="alternate" type="application/rss+xml" href="&#x2F;a&#47;feed?x=1&amp;y=2&quot;">
            <link rel="alternate" type="application/rss+xml" href="/b
            /feed">
            """
        #expect(
            Self.links(html) == [
                "https://www.example.org/a/feed?x=1&y=2%22", "https://www.example.org/b/feed",
            ])
    }

    @Test func stopsQuietlyAtAPageThatEndsInsideATag() {
        #expect(Self.links("<link rel=alternate type=application/rss+xml href=\"/x") == [])
        #expect(Self.links("<link rel=alternate type=application/rss+xml href=/x") == [])
        #expect(Self.links("<!-- <link rel=alternate type=application/rss+xml href=/x>") == [])
        #expect(Self.links("<script><link rel=alternate type=application/rss+xml href=/x>") == [])
        #expect(Self.links("<") == [])
        #expect(Self.links("") == [])
    }

    /// Linear time, counted rather than timed: on hostile pages of
    /// 8 kB, the scanner reads each byte a bounded number of times.
    @Test func readsEachByteOfAHostilePageABoundedNumberOfTimes() {
        let pieces = [
            "<link", "<link rel=\"alternate", "<link href='", "<link rel=alternate type=application/rss+xml href=/x>",
            "<!--", "<script>", "&#99999999999;", "<link rel=", "<", "</", "<!", "\"", "<a b", "<a b='x'",
            "<script></scrip", "<!-- -- -", "<a href=\"&#x2F;&amp;\">",
        ]
        for piece in pieces {
            let page = CountedBytes(Array(String(repeating: piece, count: 8_000 / piece.utf8.count + 1).utf8))
            HTMLTagScanner.forEachStartTag(in: page) { tag in _ = tag.attribute("href", in: page) }
            #expect(page.reads.count <= 6 * page.count, "\(piece): \(page.reads.count) reads of \(page.count) bytes")
            #expect(page.reads.count >= page.count / 2, "\(piece): the page was read")
        }
        let found = FeedLinkDiscovery.feedLinks(
            inHTML: Array(String(repeating: pieces[3], count: 1_000).utf8), base: Self.page)
        #expect(found == ["https://www.example.org/x"])
    }

    @Test func neverTrapsOnRandomBytes() {
        var generator = SeededGenerator(state: 0x5EED)
        let alphabet = Array("<>/=\"' \t\n&#;!-abklinrefhtypx:".utf8) + [0x00, 0xFF, 0xC3]
        for _ in 0..<2_000 {
            let length = Int(generator.next() % 200)
            let bytes = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            for link in FeedLinkDiscovery.feedLinks(inHTML: bytes, base: Self.page) {
                #expect(FeedURL.resolveHTTP(link, base: "") == link)
            }
        }
    }
}

/// A page that counts how many times its bytes are read.
private struct CountedBytes: HTMLBytes {
    final class Counter { var count = 0 }

    let bytes: [UInt8]
    let reads = Counter()

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var startIndex: Int { bytes.startIndex }
    var endIndex: Int { bytes.endIndex }

    subscript(position: Int) -> UInt8 {
        reads.count += 1
        return bytes[position]
    }

    subscript(bounds: Range<Int>) -> Slice<CountedBytes> { Slice(base: self, bounds: bounds) }
}

extension Slice: HTMLBytes where Base: HTMLBytes {}
