import Feeds
import Testing

/// SOURCE files: OPML and plain URL lists.
@Suite struct SourceListTests {
    @Test func readsNestedOPMLOutlinesInAnyCapitalisation() throws {
        let opml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <opml version="2.0"><head><title>Subscriptions</title></head><body>
              <outline text="Tech">
                <outline type="rss" text="A" xmlUrl="https://a.example/feed.xml"/>
                <outline text="Nested"><outline text="B" XMLURL="http://b.example/rss"/></outline>
              </outline>
              <outline text="C" xmlurl=" https://c.example/podcast "/>
              <outline text="A again" xmlUrl="https://a.example/feed.xml"/>
              <outline text="Folder without feed"/>
              <outline text="Not http" xmlUrl="mailto:someone@example.org"/>
              <outline text="Subscribe link" xmlUrl="itpc://d.example/feed?x=1&amp;y=2"/>
            </body></opml>
            """
        #expect(
            try SourceList.parse(Array(opml.utf8)) == [
                "https://a.example/feed.xml", "http://b.example/rss", "https://c.example/podcast",
                "http://d.example/feed?x=1&y=2",
            ])
    }

    @Test func readsPlainURLLists() throws {
        let text = """
            # my podcasts
            https://a.example/feed.xml

              http://b.example/rss\r
            #https://commented.example/out
            https://a.example/feed.xml
            feed://c.example/x
            """
        #expect(
            try SourceList.parse(Array(text.utf8)) == [
                "https://a.example/feed.xml", "http://b.example/rss", "http://c.example/x",
            ])
        #expect(try SourceList.parse([0xEF, 0xBB, 0xBF] + Array("https://a.example/f\n".utf8)) == ["https://a.example/f"])
        // A comment after the URL is left out; a `#` within one is its own.
        let commented = "https://d.example/feed.xml   # the daily one\nhttps://e.example/rss\t#tabbed\n"
        #expect(try SourceList.parse(Array(commented.utf8)) == ["https://d.example/feed.xml", "https://e.example/rss"])
        let fragment = "https://f.example/feed.xml#latest"
        #expect(try SourceList.parse(Array(fragment.utf8)) == [SourceList.feedURL(fragment)])
        #expect(try SourceList.parse([]) == [])
    }

    @Test func rejectsALineThatIsNotAFeedURL() {
        do {
            _ = try SourceList.parse(Array("https://a.example/f\nnot a url\n".utf8))
            Issue.record("a bad line was accepted")
        } catch {
            #expect(error.message.contains("line 2"))
        }
    }

    @Test func rejectsXMLThatIsNotOPML() {
        #expect(throws: FeedError.self) {
            try SourceList.parse(Array("<rss><channel/></rss>".utf8))
        }
        #expect(throws: FeedError.self) {
            try SourceList.parse(Array("<!DOCTYPE opml [<!ENTITY a 'b'>]><opml/>".utf8))
        }
    }

    @Test func readsOPMLInUTF16AndAfterABOMAndWhiteSpace() throws {
        let opml = """
            <?xml version="1.0" encoding="UTF-16"?>
            <opml version="1.0"><body><OUTLINE title="A" xmlURL="https://a.example/ä.xml"/></body></opml>
            """
        #expect(try SourceList.parse(Fixtures.utf16LittleEndian(opml)) == ["https://a.example/%C3%A4.xml"])
        #expect(try SourceList.parse(Fixtures.utf16BigEndian(opml)) == ["https://a.example/%C3%A4.xml"])
        let utf8 = [0xEF, 0xBB, 0xBF] + Array(("\n  " + opml.replacingOccurrences("UTF-16", "UTF-8")).utf8)
        #expect(try SourceList.parse(utf8) == ["https://a.example/%C3%A4.xml"])
    }

    @Test func recoversOPMLWithBareAmpersandsAndKeepsOnlyWholeOutlinesOfATruncatedOne() throws {
        let opml = """
            <opml version="2.0"><body><outline text="Folder">
            <outline text="A & B" xmlUrl="https://a.example/feed?x=1&y=2"/>
            <outline text="C" xmlUrl="https://c.example/feed.xml"/>
            <outline text="D" xmlUrl="https://d.example/feed.xml"/></outline></body></opml>
            """
        let all = ["https://a.example/feed?x=1&y=2", "https://c.example/feed.xml", "https://d.example/feed.xml"]
        #expect(try SourceList.parse(Array(opml.utf8)) == all)
        // Cut anywhere: each URL is whole or absent, never shortened.
        let bytes = Array(opml.utf8)
        for cut in 1..<bytes.count {
            guard let urls = try? SourceList.parse(Array(bytes[..<cut])) else { continue }
            #expect(urls == Array(all.prefix(urls.count)), "cut at \(cut)")
        }
        let cutInD = Array(bytes[..<(bytes.count - 40)])
        #expect(try SourceList.parse(cutInD) == Array(all.prefix(2)))
    }

    /// A damaged OPML is read as far as it goes (above); `damage` says
    /// what is wrong and where, so the mount can warn that feeds may be
    /// missing. Well-formed OPML and plain lists have none.
    @Test func namesTheDamageOfAnOPMLReadInRecoverMode() throws {
        let whole = #"<opml version="2.0"><body><outline xmlUrl="https://a.example/f"/></body></opml>"#
        #expect(SourceList.damage(in: Array(whole.utf8)) == nil)
        #expect(SourceList.damage(in: Array("https://a.example/f\n# https://b\n".utf8)) == nil)
        let cut = #"<opml version="2.0"><body><outline xmlUrl="https://a.example/f"/><outline xmlUrl="https://b"#
        let damage = try #require(SourceList.damage(in: Array(cut.utf8)))
        #expect(damage.contains("line 1"), "\(damage)")
        #expect(try SourceList.parse(Array(cut.utf8)) == ["https://a.example/f"])
    }

    @Test func readsURLListsWithWindowsLineEndsAndNoFinalNewline() throws {
        let text = "https://a.example/1\r\n\thttps://b.example/2  \r\nitpc://c.example/3"
        #expect(
            try SourceList.parse(Array(text.utf8)) == [
                "https://a.example/1", "https://b.example/2", "http://c.example/3",
            ])
    }
}
