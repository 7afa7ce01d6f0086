import Feeds
import Testing

/// The vocabularies around the core formats: iTunes images, Podcasting 2.0
/// transcripts and chapters, Media RSS, and Atom's own conventions.
@Suite struct FeedNamespaceTests {
    // MARK: - Podcasting 2.0

    @Test func readsTranscriptsAndChapters() throws {
        let feed = try Fixtures.parse(
            Fixtures.rss(
                Fixtures.item(
                    "One", url: "http://x.example/1.mp3",
                    extra: """
                        <podcast:transcript url="https://x.example/1.vtt" type="text/vtt" language="en" rel="captions"/>
                        <podcast:transcript url="/1.srt" type=" Application/SRT "/>
                        <podcast:transcript url="https://x.example/1.vtt" type="text/vtt"/>
                        <podcast:transcript url="javascript:alert(1)" type="text/html"/>
                        <podcast:transcript type="text/plain"/>
                        <podcast:chapters url="ftp://x.example/1.json" type="application/json+chapters"/>
                        <podcast:chapters url="1.chapters.json" type="application/json+chapters"/>
                        """)))
        let episode = try #require(feed.episodes.first)
        #expect(
            episode.transcripts == [
                ParsedTranscript(url: "https://x.example/1.vtt", type: "text/vtt", language: "en", rel: "captions"),
                ParsedTranscript(url: "https://example.org/1.srt", type: "application/srt"),
            ])
        let chapters = ParsedChapters(
            url: "https://example.org/podcast/1.chapters.json", type: "application/json+chapters")
        #expect(episode.chapters == chapters)
    }

    @Test func acceptsTheOlderNamespaceURIAndAnUndeclaredPrefix() throws {
        for declaration in [
            "xmlns:podcast=\"https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md\"", "",
        ] {
            let feed = try Fixtures.parse(
                """
                <rss version="2.0" \(declaration)><channel><item><enclosure url="http://x.example/1.mp3"/>
                <podcast:transcript url="http://x.example/1.srt" type="application/x-subrip"/>
                <podcast:chapters url="http://x.example/1.json"/></item></channel></rss>
                """)
            #expect(feed.episodes.first?.transcripts.map(\.url) == ["http://x.example/1.srt"], "\(declaration)")
            #expect(feed.episodes.first?.chapters == ParsedChapters(url: "http://x.example/1.json"))
        }
    }

    @Test func ignoresPodcastElementsInAnotherNamespace() throws {
        let feed = try Fixtures.parse(
            """
            <rss xmlns:podcast="http://example.org/not-podcasting-2.0"><channel><item>
            <enclosure url="http://x.example/1.mp3"/><podcast:transcript url="http://x.example/1.srt"/>
            </item></channel></rss>
            """)
        #expect(feed.episodes.first?.transcripts == [])
    }

    // MARK: - iTunes

    @Test func readsITunesImagesOnChannelAndItem() throws {
        let feed = try Fixtures.parse(
            Fixtures.rss(
                Fixtures.item("With href", url: "http://x.example/1.mp3", extra: "<itunes:image href='art/1.jpg'/>")
                    + Fixtures.item(
                        "With text", url: "http://x.example/2.mp3",
                        extra: "<itunes:image>https://x.example/2.png</itunes:image>")
                    + Fixtures.item("Unsafe", url: "http://x.example/3.mp3", extra: "<itunes:image href='file:///x'/>")
                    + Fixtures.item("None", url: "http://x.example/4.mp3"),
                channel: """
                    <title>Show</title><image><url>https://x.example/rss.png</url></image>
                    <itunes:image href="https://x.example/itunes.png"/>
                    """))
        #expect(feed.imageURL == "https://x.example/itunes.png")
        #expect(
            feed.episodes.map(\.imageURL) == [
                "https://example.org/podcast/art/1.jpg", "https://x.example/2.png", nil, nil,
            ])
        let rssImageOnly = try Fixtures.parse(
            Fixtures.rss("", channel: "<image><url>https://x.example/rss.png</url></image>"))
        #expect(rssImageOnly.imageURL == "https://x.example/rss.png")
    }

    @Test func readsTheITunesNamespaceInAnyCapitalisation() throws {
        // Taverncast declares http://www.itunes.com/DTDs/Podcast-1.0.dtd.
        let feed = try Fixtures.parse(
            """
            <rss xmlns:it="http://www.itunes.com/DTDs/Podcast-1.0.dtd"><channel><it:image href="http://x.example/a.png"/>
            <item><it:title>T</it:title><enclosure url="http://x.example/a.mp3"/></item></channel></rss>
            """)
        #expect(feed.imageURL == "http://x.example/a.png")
        #expect(feed.episodes.first?.title == "T")
    }

    // MARK: - Media RSS

    @Test func usesMediaContentOnlyWithoutAnEnclosure() throws {
        let feed = try Fixtures.parse(
            Fixtures.rss(
                """
                <item><title>Both</title><enclosure url="http://x.example/e.mp3" type="audio/mpeg"/>
                <media:content url="http://x.example/m.mp3" type="audio/mpeg"/></item>
                <item><title>Media only</title>
                <media:content url="http://x.example/thumb.jpg" medium="image"/>
                <media:content url="http://x.example/cover.png" type="image/png"/>
                <media:content url="http://x.example/v.mp4" medium="video" fileSize="1000"/></item>
                <item><title>Group</title><media:group>
                <media:content url="http://x.example/low.m4a" type="audio/mp4" fileSize="10"/>
                <media:content url="http://x.example/high.m4a" type="audio/mp4" fileSize="20"/></media:group></item>
                <item><title>Images only</title><media:thumbnail url="http://x.example/t.jpg"/>
                <media:content url="http://x.example/c.jpg" type="image/jpeg"/></item>
                """))
        #expect(
            feed.episodes.map(\.enclosureURL) == [
                "http://x.example/e.mp3", "http://x.example/v.mp4", "http://x.example/low.m4a",
            ])
        #expect(feed.episodes.map(\.enclosureLength) == [nil, 1000, 10])
    }

    // MARK: - Atom

    @Test func readsAtomEntries() throws {
        let feed = try Fixtures.parse(
            """
            <feed xmlns="http://www.w3.org/2005/Atom" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
                  xmlns:podcast="https://podcastindex.org/namespace/1.0" xml:base="https://cdn.example.net/show/">
            <title type="html">Atom &amp;amp; Show</title><updated>2003-12-13T18:30:02Z</updated>
            <itunes:image href="cover.jpg"/>
            <entry><title>Updated only</title><id>  urn:uuid:1  </id><updated>2003-12-13T18:30:02Z</updated>
              <link rel="alternate" type="text/html" href="http://x.example/page"/>
              <link rel="related" href="http://x.example/other.mp3" type="audio/mpeg"/>
              <link rel=" Enclosure " href="ep1.mp3" length="10" type="audio/mpeg"/>
              <itunes:image href="ep1.jpg"/><podcast:transcript url="ep1.vtt" type="text/vtt"/></entry>
            <entry xml:base="https://other.example/base/"><title>Published wins</title><id>urn:uuid:2</id>
              <updated>2004-01-01T00:00:00Z</updated><published>2003-12-13T08:29:29-04:00</published>
              <link rel="enclosure" href="ep2.m4a" type="audio/mp4"/></entry>
            <entry><title>Link without rel</title><id>urn:uuid:3</id><link href="http://x.example/3.mp3"/></entry>
            </feed>
            """)
        #expect(feed.title == "Atom &amp; Show")
        #expect(feed.imageURL == "https://cdn.example.net/show/cover.jpg")
        #expect(
            feed.episodes == [
                ParsedEpisode(
                    guid: "urn:uuid:1", title: "Updated only", published: 1_071_340_202,
                    enclosureURL: "https://cdn.example.net/show/ep1.mp3", enclosureLength: 10,
                    enclosureType: "audio/mpeg", imageURL: "https://cdn.example.net/show/ep1.jpg",
                    transcripts: [ParsedTranscript(url: "https://cdn.example.net/show/ep1.vtt", type: "text/vtt")]),
                ParsedEpisode(
                    guid: "urn:uuid:2", title: "Published wins", published: 1_071_318_569,
                    enclosureURL: "https://other.example/base/ep2.m4a", enclosureType: "audio/mp4"),
            ])
    }

    @Test func readsAtom03AndAtomLinksInsideRSS() throws {
        let atom03 = try Fixtures.parse(
            """
            <feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Old Atom</title>
            <modified>2004-01-01T00:00:00Z</modified>
            <entry><title>E</title><id>tag:x,2004:1</id><issued>2004-01-02T00:00:00Z</issued>
            <link rel="enclosure" href="http://x.example/e.mp3" type="audio/mpeg"/></entry></feed>
            """)
        #expect(atom03.lastBuildDate == 1_072_915_200)
        #expect(atom03.episodes.map(\.published) == [1_073_001_600])
        let rss = try Fixtures.parse(
            Fixtures.rss(
                "<item><title>A</title><atom:link rel='enclosure' href='http://x.example/a.mp3' type='audio/mpeg'/></item>"
            ))
        #expect(rss.episodes.map(\.enclosureURL) == ["http://x.example/a.mp3"])
    }

    // MARK: - Identity and dates

    @Test func prefersPubDateOverOtherDatesWhateverTheOrder() throws {
        let feed = try Fixtures.parse(
            """
            <rss xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><item>
            <dc:date>2001-01-01T00:00:00Z</dc:date><pubDate>Wed, 03 Aug 2005 12:34:56 GMT</pubDate>
            <enclosure url="http://x.example/a.mp3"/></item>
            <item><pubDate>not a date</pubDate><dc:date>2001-01-01T00:00:00Z</dc:date>
            <enclosure url="http://x.example/b.mp3"/></item></channel></rss>
            """)
        #expect(feed.episodes.map(\.published) == [1_123_072_496, 978_307_200])
    }

    @Test func identityIsTheGUIDElseTheEnclosureURL() throws {
        let feed = try Fixtures.parse(
            Fixtures.rss(
                """
                <item><guid isPermaLink="true">  http://x.example/post/1  </guid><enclosure url="http://x.example/1.mp3"/></item>
                <item><guid>   </guid><enclosure url="http://x.example/2.mp3"/></item>
                <item><enclosure url="http://x.example/3.mp3"/></item>
                """))
        #expect(
            feed.episodes.map(\.identity) == [
                "http://x.example/post/1", "http://x.example/2.mp3", "http://x.example/3.mp3",
            ])
    }
}
