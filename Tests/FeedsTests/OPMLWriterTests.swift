import Feeds
import Testing

/// Writing subscriptions as OPML.
@Suite struct OPMLWriterTests {
    @Test func writesAnOPMLDocumentThatReadsBackEveryURL() throws {
        let outlines: [(title: String, url: String)] = [
            ("Plain", "https://a.example/feed.xml"),
            ("Tom & Jerry <\"live\"> 'n' ]]> 🎧", "https://b.example/f?a=1&b=2&c=\"3\""),
            ("Ünïcödé – 日本語", "http://c.example/ä ö/rss"),
            ("control\u{0}\u{1}\u{8}\u{B}\u{1F}\u{FFFE}\u{FFFF} chars\ttab\nline", "https://d.example/x?\u{1}y"),
            ("", "https://e.example/'single'"),
        ]
        let document = OPMLWriter.document(title: "My <podcasts> & ]]> \u{7}", outlines: outlines)
        let expected = outlines.compactMap { FeedURL.resolveHTTP($0.url, base: "") }
        #expect(expected.count == 4)  // "d" holds a control character no feed URL may hold.
        #expect(try SourceList.parse(document) == expected)
        #expect(try SubscriptionFile(bytes: document).urls == expected)
    }

    @Test func writesTheOPML2LayoutWithEscapedValues() {
        let document = OPMLWriter.document(
            title: "Mine & yours", outlines: [("A \"B\"", "https://a.example/f?x=1&y=2")])
        #expect(
            String(decoding: document, as: UTF8.self) == """
                <?xml version="1.0" encoding="UTF-8"?>
                <opml version="2.0">
                  <head>
                    <title>Mine &amp; yours</title>
                  </head>
                  <body>
                    <outline type="rss" text="A &quot;B&quot;" title="A &quot;B&quot;" \
                xmlUrl="https://a.example/f?x=1&amp;y=2"/>
                  </body>
                </opml>

                """)
    }

    @Test func writesAnEmptyBodyThatSubscriptionFileCanAddTo() throws {
        var file = try SubscriptionFile(bytes: OPMLWriter.document(title: "Empty", outlines: []))
        #expect(file.urls.isEmpty)
        #expect(file.add(url: "https://a.example/f", title: "A") == true)
        #expect(file.bytes == OPMLWriter.document(title: "Empty", outlines: [("A", "https://a.example/f")]))
    }
}
