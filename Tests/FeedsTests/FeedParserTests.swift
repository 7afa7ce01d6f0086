import Feeds
import Testing

/// Feed parsing on small hand-written documents, one behaviour each.
@Suite struct FeedParserTests {
    // MARK: - Helpers

    private static let base = "https://example.org/podcast/feed.xml"

    private func parse(_ xml: String, base: String = base) throws(FeedError) -> ParsedFeed {
        try FeedParser.parse(Array(xml.utf8), baseURL: base)
    }

    private func rss(_ items: String, channel: String = "<title>Show</title>") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
        <channel>\(channel)\(items)</channel></rss>
        """
    }

    // MARK: - RSS 2.0

    @Test func readsChannelAndItemFields() throws {
        let feed = try parse(
            rss(
                """
                <item><title> Ep &amp; 1 </title><guid isPermaLink="false">g-1</guid>
                <pubDate>Wed, 27 Apr 2011 07:00:00 GMT</pubDate>
                <enclosure url=" https://cdn.example.org/1.mp3 " length="1234" type=" Audio/MPEG "/></item>
                """,
                channel: """
                    <title><![CDATA[My <Show>]]></title><lastBuildDate>Thu, 28 Apr 2011 07:00:00 +0000</lastBuildDate>
                    <itunes:image href="https://example.org/art.jpg"/>
                    """))
        #expect(feed.title == "My <Show>")
        #expect(feed.lastBuildDate == 1_303_974_000)
        #expect(feed.imageURL == "https://example.org/art.jpg")
        #expect(
            feed.episodes == [
                ParsedEpisode(
                    guid: "g-1", title: "Ep & 1", published: 1_303_887_600,
                    enclosureURL: "https://cdn.example.org/1.mp3", enclosureLength: 1234, enclosureType: "audio/mpeg")
            ])
        #expect(feed.episodes[0].identity == "g-1")
    }

    @Test func keepsEpisodeWithUnparseableDateAndUsesURLAsIdentity() throws {
        let feed = try parse(
            rss("<item><guid></guid><pubDate>someday</pubDate><enclosure url='http://a.example/x.mp3' length='0'/></item>"))
        #expect(feed.episodes.count == 1)
        #expect(feed.episodes[0].published == nil)
        #expect(feed.episodes[0].guid == nil)
        #expect(feed.episodes[0].enclosureLength == nil)
        #expect(feed.episodes[0].identity == "http://a.example/x.mp3")
    }

    @Test func resolvesRelativeEnclosureURLsAgainstTheFeedURL() throws {
        let feed = try parse(
            rss(
                """
                <item><enclosure url="ep1.mp3"/></item>
                <item><enclosure url="/media/ep2.mp3"/></item>
                <item><enclosure url="//cdn.example.net/ep3.mp3"/></item>
                <item><enclosure url="../ep 4.mp3"/></item>
                """))
        #expect(
            feed.episodes.map(\.enclosureURL) == [
                "https://example.org/podcast/ep1.mp3", "https://example.org/media/ep2.mp3",
                "https://cdn.example.net/ep3.mp3", "https://example.org/ep%204.mp3",
            ])
    }

    @Test func dropsItemsWithoutAnHTTPEnclosure() throws {
        let feed = try parse(
            rss(
                """
                <item><title>ftp</title><enclosure url="ftp://example.org/a.mp3"/></item>
                <item><title>file</title><enclosure url="file:///etc/passwd"/></item>
                <item><title>js</title><enclosure url="javascript:alert(1)"/></item>
                <item><title>backslash</title><enclosure url="http://example.org\\a.mp3"/></item>
                <item><title>control</title><enclosure url="http://example.org/&#x85;a.mp3"/></item>
                <item><title>none</title></item>
                <item><title>ok</title><enclosure url="HTTP://example.org/ok.mp3"/></item>
                """),
            base: "file:///tmp/feed.xml")
        #expect(feed.episodes.map(\.title) == ["ok"])
        #expect(feed.episodes[0].enclosureURL == "http://example.org/ok.mp3")
    }

    @Test func resolvedURLsCarryNoControlCharactersOrBackslashes() {
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{1}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/a\u{7F}b.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example\\a.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http:///a.mp3", base: "") == nil)
        #expect(FeedURL.resolveHTTP("http://x.example/ä b.mp3", base: "") == "http://x.example/%C3%A4%20b.mp3")
        #expect(FeedURL.resolveHTTP("https://op3.dev/e,pg=1/x.mp3", base: "") == "https://op3.dev/e,pg=1/x.mp3")
    }

    @Test func prefersAudioEnclosureAndFallsBackToMediaContent() throws {
        let feed = try parse(
            """
            <rss xmlns:media="http://search.yahoo.com/mrss/"><channel>
            <item><enclosure url="http://x.example/a.jpg" type="image/jpeg"/>
                  <enclosure url="http://x.example/a.mp3" type="audio/mpeg"/></item>
            <item><media:group><media:content url="http://x.example/b.m4a" fileSize="99" type="audio/mp4"/></media:group></item>
            </channel></rss>
            """)
        #expect(feed.episodes.map(\.enclosureURL) == ["http://x.example/a.mp3", "http://x.example/b.m4a"])
        #expect(feed.episodes[1].enclosureLength == 99)
    }

    @Test func removesExactDuplicateItemsOnly() throws {
        let item = "<item><title>A</title><guid>1</guid><enclosure url='http://x.example/a.mp3'/></item>"
        let other = "<item><title>A again</title><guid>1</guid><enclosure url='http://x.example/a.mp3'/></item>"
        let feed = try parse(rss(item + item + other + item))
        #expect(feed.episodes.map(\.title) == ["A", "A again"])
    }

    @Test func recoversFromBareAmpersandsAndUndefinedEntities() throws {
        let feed = try parse(
            rss("<item><title>Fish & Chips &nbsp;&amp; more &lt;3</title><enclosure url='http://x.example/a.mp3?a=1&b=2'/></item>"))
        #expect(feed.episodes.first?.title == "Fish & Chips &nbsp;& more <3")
        #expect(feed.episodes.first?.enclosureURL == "http://x.example/a.mp3?a=1&b=2")
    }

    @Test func acceptsWhitespaceBeforeTheXMLDeclaration() throws {
        let feed = try parse("\n  \n" + rss("<item><enclosure url='http://x.example/a.mp3'/></item>"))
        #expect(feed.title == "Show")
        #expect(feed.episodes.count == 1)
    }

    @Test func acceptsUndeclaredITunesPrefix() throws {
        let feed = try parse(
            "<rss><channel><itunes:image href='http://x.example/i.png'/><item><itunes:title>T</itunes:title><enclosure url='http://x.example/a.mp3'/></item></channel></rss>"
        )
        #expect(feed.imageURL == "http://x.example/i.png")
        #expect(feed.episodes.first?.title == "T")
    }

    // MARK: - Encodings

    @Test func readsUTF16LittleEndianWithBOM() throws {
        let xml = rss("<item><title>Größe ₿</title><enclosure url='http://x.example/a.mp3'/></item>")
            .replacingUTF8Declaration(with: "UTF-16")
        var bytes: [UInt8] = [0xFF, 0xFE]
        for unit in xml.utf16 {
            bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)]
        }
        let feed = try FeedParser.parse(bytes, baseURL: Self.base)
        #expect(feed.episodes.first?.title == "Größe ₿")
    }

    @Test func readsUTF16BigEndianWithoutBOM() throws {
        let xml = rss("<item><title>Größe</title><enclosure url='http://x.example/a.mp3'/></item>")
            .replacingUTF8Declaration(with: "UTF-16")
        let bytes = xml.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let feed = try FeedParser.parse(bytes, baseURL: Self.base)
        #expect(feed.episodes.first?.title == "Größe")
    }

    @Test func readsDeclaredLatin1() throws {
        var bytes = Array("<?xml version='1.0' encoding='ISO-8859-1'?><rss><channel><title>Gr".utf8)
        bytes += [0xF6, 0xDF, 0x65]  // "öße" in Latin-1
        bytes += Array("</title></channel></rss>".utf8)
        #expect(try FeedParser.parse(bytes, baseURL: Self.base).title == "Größe")
    }

    // MARK: - Atom and RSS 1.0

    @Test func readsAtomEnclosureLinks() throws {
        let feed = try parse(
            """
            <feed xmlns="http://www.w3.org/2005/Atom"><title>Atom Show</title>
            <updated>2003-12-13T18:30:02Z</updated><logo>/logo.png</logo>
            <entry><title>One</title><id>urn:1</id><published>2003-12-13T08:29:29-04:00</published>
            <link rel="alternate" href="http://x.example/page"/>
            <link rel="enclosure" href="one.mp3" length="10" type="audio/mpeg"/></entry>
            <entry><title>No enclosure</title><id>urn:2</id></entry>
            </feed>
            """)
        #expect(feed.title == "Atom Show")
        #expect(feed.lastBuildDate == 1_071_340_202)
        #expect(feed.imageURL == "https://example.org/logo.png")
        #expect(
            feed.episodes == [
                ParsedEpisode(
                    guid: "urn:1", title: "One", published: 1_071_318_569,
                    enclosureURL: "https://example.org/podcast/one.mp3", enclosureLength: 10, enclosureType: "audio/mpeg")
            ])
    }

    @Test func readsRSS1RDF() throws {
        let feed = try parse(
            """
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
                     xmlns:dc="http://purl.org/dc/elements/1.1/">
            <channel rdf:about="http://x.example/"><title>RDF Show</title><dc:date>2004-01-01T00:00:00Z</dc:date></channel>
            <item rdf:about="http://x.example/1"><title>One</title><dc:date>2004-01-02T00:00:00Z</dc:date>
            <enclosure xmlns="http://purl.oclc.org/net/rss_2.0/enc#" url="http://x.example/1.mp3"/></item>
            <item rdf:about="http://x.example/2"><title>Two</title>
            <link>http://x.example/2</link></item>
            </rdf:RDF>
            """)
        #expect(feed.title == "RDF Show")
        #expect(feed.lastBuildDate == 1_072_915_200)
        // The RSS 1.0 enclosure module is not read; only RSS 2.0 style
        // enclosures without a namespace count.
        #expect(feed.episodes.isEmpty)
        let plain = try parse(
            """
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
            <channel><title>RDF Show</title></channel>
            <item rdf:about="http://x.example/1"><title>One</title><enclosure url="http://x.example/1.mp3"/></item>
            </rdf:RDF>
            """)
        #expect(plain.episodes.map(\.guid) == ["http://x.example/1"])
    }

    // MARK: - Rejections

    @Test func rejectsDocumentsThatDeclareEntities() throws {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE rss [
              <!ENTITY lol "lol">
              <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
              <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
              <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
              <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
              <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
              <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
              <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
              <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
            ]>
            <rss><channel><title>&lol9;</title></channel></rss>
            """
        #expect(throws: FeedError.self) { try parse(laughs) }
        // The same in UTF-16, where the byte scan cannot see it: the parser
        // stops at the declaration.
        let utf16: [UInt8] = [0xFF, 0xFE] + laughs.replacingOccurrences("<?xml version=\"1.0\"?>", "").utf16.flatMap {
            [UInt8($0 & 0xFF), UInt8($0 >> 8)]
        }
        #expect(throws: FeedError.self) { try FeedParser.parse(utf16, baseURL: Self.base) }
        let external = """
            <!DOCTYPE rss [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
            <rss><channel><title>&xxe;</title></channel></rss>
            """
        #expect(throws: FeedError.self) { try parse(external) }
    }

    @Test func ignoresAnExternalDTDWithoutFetchingIt() throws {
        let feed = try parse(
            """
            <!DOCTYPE rss PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://127.0.0.1:9/never.dtd">
            <rss><channel><title>T</title></channel></rss>
            """)
        #expect(feed.title == "T")
    }

    @Test func rejectsDocumentsThatAreNotFeeds() {
        do {
            _ = try parse("<html><body>Not found</body></html>")
            Issue.record("an HTML page parsed as a feed")
        } catch {
            #expect(error.message.contains("<html>"))
        }
        #expect(throws: FeedError.self) { try parse("") }
        #expect(throws: FeedError.self) { try parse("just text, no markup") }
    }
}

// MARK: - String helpers

extension String {
    /// The same XML with its `encoding="UTF-8"` declaration replaced.
    fileprivate func replacingUTF8Declaration(with encoding: String) -> String {
        replacingOccurrences("encoding=\"UTF-8\"", "encoding=\"\(encoding)\"")
    }

    /// Stdlib-only replacement, so these tests need no Foundation.
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
