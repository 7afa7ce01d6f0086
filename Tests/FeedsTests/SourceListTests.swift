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
}
