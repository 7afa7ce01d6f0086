import Feeds
import Testing

/// Feed parsing on small hand-written documents, one behaviour each.
@Suite struct FeedParserTests {
    // MARK: - Helpers

    private static let base = Fixtures.base

    private func parse(_ xml: String, base: String = base) throws(FeedError) -> ParsedFeed {
        try Fixtures.parse(xml, base: base)
    }

    private func rss(_ items: String, channel: String = "<title>Show</title>") -> String {
        Fixtures.rss(items, channel: channel)
    }

    // MARK: - Numbers from outside

    @Test func enclosureLengthsOutsideWhatAFileCanBeAreUnknown() throws {
        let cases: [(String, Int64?)] = [
            ("0", nil), ("1", 1), ("2147483648", 2_147_483_648), ("4294967296", 4_294_967_296),
            ("1099511627776", 1 << 40), ("1099511627777", nil), ("9007199254740992", nil),
            ("9223372036854775807", nil), ("9223372036854775808", nil), ("18446744073709551616", nil),
            ("9999999999999999999999", nil), ("-5", nil), ("-0", nil), ("+17", nil), ("1e30", nil),
            ("0x10", nil), ("", nil), (" 42 ", 42), ("4 2", nil), ("١٢", nil), ("00000000000000000000012", nil),
        ]
        for (text, expected) in cases {
            let feed = try parse(rss(#"<item><enclosure url="https://x.example/a.mp3" length="\#(text)"/></item>"#))
            #expect(feed.episodes.first?.enclosureLength == expected, "length=\(text)")
        }
    }

    @Test func datesOutsideWhatAFileCanShowAreNoDate() throws {
        let cases: [(String, Int64?)] = [
            ("Mon, 01 Jan 0001 00:00:00 GMT", nil), ("0001-01-01T00:00:00Z", nil),
            ("Wed, 31 Dec 1969 23:59:59 GMT", nil), ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648), ("Sun, 07 Feb 2106 06:28:16 GMT", 4_294_967_296),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799), ("9999-12-31T23:59:59-01:00", nil),
            ("99999999999", nil), ("-1", nil), ("", nil),
        ]
        for (text, expected) in cases {
            let feed = try parse(
                rss(#"<item><pubDate>\#(text)</pubDate><enclosure url="https://x.example/a.mp3"/></item>"#,
                    channel: "<title>Show</title><lastBuildDate>\(text)</lastBuildDate>"))
            #expect(feed.episodes.first?.published == expected, "pubDate \(text)")
            #expect(feed.lastBuildDate == expected, "lastBuildDate \(text)")
        }
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

    @Test func keepsTheTextOfMarkupInsideATitleButNotOfShowNotes() throws {
        let feed = try parse(
            rss(
                """
                <item><title>A <b>bold</b> <i><b>move</b></i></title><description><p>notes</p></description>
                <enclosure url="http://x.example/a.mp3"/></item>
                """))
        #expect(feed.episodes.first?.title == "A bold move")
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

    @Test func removesItemsThatRepeatIdentityAndEnclosureURL() throws {
        let item = "<item><title>A</title><guid>1</guid><enclosure url='http://x.example/a.mp3'/></item>"
        // Same GUID and URL, other title: Taverncast does this; one episode.
        let retitled = "<item><title>A again</title><guid>1</guid><enclosure url='http://x.example/a.mp3'/></item>"
        // Same GUID, another file: a different episode for the catalogue.
        let otherFile = "<item><title>B</title><guid>1</guid><enclosure url='http://x.example/b.mp3'/></item>"
        // Same file, another GUID: two items that share a recording.
        let otherGUID = "<item><title>C</title><guid>2</guid><enclosure url='http://x.example/a.mp3'/></item>"
        // No GUID: the URL is the identity, so a repeat is a duplicate.
        let bare = "<item><title>D</title><enclosure url='http://x.example/d.mp3'/></item>"
        let feed = try parse(rss(item + item + retitled + otherFile + otherGUID + bare + bare + item))
        #expect(feed.episodes.map(\.title) == ["A", "B", "C", "D"])
        #expect(feed.episodes.map(\.identity) == ["1", "1", "2", "http://x.example/d.mp3"])
    }

    @Test func recoversFromBareAmpersandsAndUndefinedEntities() throws {
        let feed = try parse(
            rss("<item><title>Fish & Chips &nbsp;&amp; more &lt;3</title><enclosure url='http://x.example/a.mp3?a=1&b=2'/></item>"))
        // `&nbsp;` is HTML, which is what the publisher meant.
        #expect(feed.episodes.first?.title == "Fish & Chips \u{A0}& more <3")
        #expect(feed.warnings.contains { $0.hasPrefix("not well-formed XML") })
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
        // The RSS 1.0 enclosure module, with the URL in `url` here and in
        // `rdf:resource` below.
        #expect(
            feed.episodes == [
                ParsedEpisode(
                    guid: "http://x.example/1", title: "One", published: 1_073_001_600,
                    enclosureURL: "http://x.example/1.mp3")
            ])
        let module = try parse(
            """
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
                     xmlns:enc="http://purl.oclc.org/net/rss_2.0/enc#">
            <channel><title>RDF Show</title></channel>
            <item rdf:about="urn:ep:1"><title>One</title>
            <enc:enclosure rdf:resource="http://x.example/1.ogg" enc:type="audio/ogg" enc:length="42"/></item>
            </rdf:RDF>
            """)
        #expect(
            module.episodes == [
                ParsedEpisode(
                    guid: "urn:ep:1", title: "One", enclosureURL: "http://x.example/1.ogg", enclosureLength: 42,
                    enclosureType: "audio/ogg")
            ])
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
