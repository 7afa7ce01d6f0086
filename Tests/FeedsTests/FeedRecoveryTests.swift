import Feeds
import Testing

/// Documents that are not quite well-formed: what recover mode keeps must be
/// exactly what the publisher wrote, and a cut or a NUL never shortens a URL.
@Suite struct FeedRecoveryTests {
    // MARK: - Fixtures

    /// Three items with every field podfs reads; the ampersand is escaped,
    /// so the whole document is well-formed.
    static let document = Fixtures.rss(
        """

        <item><title>One</title><guid>g-1</guid><pubDate>Wed, 03 Aug 2005 12:34:56 GMT</pubDate>\
        <enclosure url="http://x.example/one.mp3?a=1&amp;b=2" length="1234" type="audio/mpeg"/>\
        <itunes:image href="http://x.example/one.jpg"/></item>
        <item><title>Two ₿</title><guid>g-2</guid>\
        <enclosure url="https://cdn.x.example/path/two.m4a" length="99" type="audio/mp4"/>\
        <podcast:transcript url="http://x.example/two.vtt" type="text/vtt"/></item>
        <item><title>Three</title><enclosure url="http://x.example/three.mp3"/></item>

        """)

    static let full: ParsedFeed = {
        // The fixture is well-formed; a failure here fails every test below.
        (try? Fixtures.parse(document)) ?? ParsedFeed()
    }()

    // MARK: - Truncation

    @Test func aTruncatedFeedKeepsExactlyItsCompleteItems() throws {
        #expect(Self.full.episodes.count == 3)
        #expect(Self.full.warnings.isEmpty)
        let bytes = Array(Self.document.utf8)
        let itemEnds = Self.ends(of: "</item>", in: bytes)
        for cut in 1..<bytes.count {
            let complete = itemEnds.filter { $0 <= cut }.count
            do {
                let feed = try Fixtures.parse(Array(bytes[..<cut]))
                // Only whole items, each exactly as in the full document.
                #expect(feed.episodes == Array(Self.full.episodes.prefix(complete)), "cut at \(cut)")
                #expect(feed.warnings.contains { $0.contains("truncated") }, "cut at \(cut)")
            } catch {
                // Nothing intact: an error ("not well-formed", or "not a
                // podcast feed" when the cut is inside `<rss`), never an
                // empty listing.
                #expect(complete == 0, "cut at \(cut): \(error.message)")
            }
        }
    }

    @Test func aTruncatedUTF16FeedKeepsExactlyItsCompleteItems() throws {
        let units = Fixtures.utf16LittleEndian(Self.document.replacingUTF8Declaration(with: "UTF-16"))
        var seenCounts = Set<Int>()
        // Every other byte: a cut inside a code unit and between two.
        for cut in stride(from: 3, to: units.count, by: 7) {
            guard let feed = try? Fixtures.parse(Array(units[..<cut])) else { continue }
            #expect(feed.episodes == Array(Self.full.episodes.prefix(feed.episodes.count)), "cut at \(cut)")
            seenCounts.insert(feed.episodes.count)
        }
        #expect(seenCounts == [1, 2, 3])
    }

    @Test func aFeedCutAfterItsLastItemKeepsEverything() throws {
        let cut = Self.document.replacingOccurrences("</channel></rss>", "")
        let feed = try Fixtures.parse(cut)
        #expect(feed.episodes == Self.full.episodes)
        #expect(feed.title == "Show")
    }

    // MARK: - NUL and control characters

    @Test func aNULAnywhereNeverShortensOrGluesAURL() throws {
        let bytes = Array(Self.document.utf8)
        let byURL = Dictionary(uniqueKeysWithValues: Self.full.episodes.map { ($0.enclosureURL, $0) })
        var survivors = 0
        for position in 0...bytes.count {
            let damaged = Array(bytes[..<position]) + [0] + Array(bytes[position...])
            guard let feed = try? Fixtures.parse(damaged) else { continue }
            for episode in feed.episodes {
                let original = try #require(byURL[episode.enclosureURL], "NUL at \(position): \(episode.enclosureURL)")
                #expect(episode.guid == original.guid, "NUL at \(position)")
                // A NUL between the bytes of one UTF-8 character ("₿")
                // breaks that character; anywhere else the title is whole.
                let splitsCharacter =
                    position > 0 && position < bytes.count && bytes[position - 1] >= 0x80
                    && bytes[position] >= 0x80 && bytes[position] < 0xC0
                if !splitsCharacter {
                    #expect(episode.title == original.title, "NUL at \(position)")
                }
                // A link with the NUL in it is dropped, never shortened.
                #expect(episode.imageURL == nil || episode.imageURL == original.imageURL, "NUL at \(position)")
                #expect(
                    episode.transcripts.allSatisfy { original.transcripts.map(\.url).contains($0.url) },
                    "NUL at \(position)")
                survivors += 1
            }
        }
        // Most positions damage one item at most.
        #expect(survivors > bytes.count * 2)
    }

    @Test func aNULInAUTF16FeedNeverShortensAURL() throws {
        let units = Fixtures.utf16LittleEndian(Self.document.replacingUTF8Declaration(with: "UTF-16"))
        let urls = Set(Self.full.episodes.map(\.enclosureURL))
        var survivors = 0
        for position in stride(from: 2, through: units.count, by: 2) {
            let damaged = Array(units[..<position]) + [0, 0] + Array(units[position...])
            guard let feed = try? Fixtures.parse(damaged) else { continue }
            #expect(feed.episodes.allSatisfy { urls.contains($0.enclosureURL) }, "NUL at \(position)")
            survivors += feed.episodes.count
        }
        // Fewer survive than in UTF-8 (a NUL unit ends more of the document),
        // but the check ran on hundreds of episodes, not on none.
        print("UTF-16 with a NUL: \(survivors) episodes over \(units.count / 2) positions")
        #expect(survivors >= units.count / 2 / 4, "\(survivors) episodes over \(units.count / 2) positions")
    }

    @Test func aNULInAnEnclosureURLDropsOnlyThatItem() throws {
        let xml = Fixtures.rss(
            Fixtures.item("A", url: "http://x.example/a.mp3")
                + Fixtures.item("B", url: "http://x.example/b.mp3\u{0}evil.mp3")
                + Fixtures.item("C\u{0}D", url: "http://x.example/c.mp3"))
        let feed = try Fixtures.parse(xml)
        #expect(feed.episodes.map(\.enclosureURL) == ["http://x.example/a.mp3", "http://x.example/c.mp3"])
        #expect(feed.episodes.map(\.title) == ["A", "CD"])
        #expect(feed.warnings.contains { $0.contains("NUL") })
    }

    @Test func removesControlCharactersFromTextAndRejectsURLsWithThem() throws {
        // gofeed's rss_channel_item_illegal_char expects "abcd".
        let xml = Fixtures.rss(
            Fixtures.item("ab\u{8}cd", url: "http://x.example/a.mp3")
                + Fixtures.item("Escape", url: "http://x.example/e\u{1B}.mp3")
                + Fixtures.item("Reference &#x1B;&#0;", url: "http://x.example/r&#x7;.mp3")
                + Fixtures.item("Fine", url: "http://x.example/f.mp3"))
        let feed = try Fixtures.parse(xml)
        #expect(feed.episodes.map(\.title) == ["abcd", "Fine"])
    }

    // MARK: - Other damage

    @Test func keepsAnItemWhoseTitleHasABareLessThanSign() throws {
        // libxml2 skips the `<`; the enclosure is untouched.
        let feed = try Fixtures.parse(Fixtures.rss(Fixtures.item("a < b", url: "http://x.example/a.mp3")))
        #expect(feed.episodes.map(\.enclosureURL) == ["http://x.example/a.mp3"])
        #expect(feed.warnings.first?.hasPrefix("not well-formed XML") == true)
    }

    @Test func dropsAnItemWithABrokenStartTagOrAMismatchedEndTag() throws {
        let xml = Fixtures.rss(
            """
            <item><title>Broken</title><enclosure url="http://x.example/b.mp3" length=12/></item>
            <item><title>Mismatch</title><enclosure url="http://x.example/m.mp3"/></itme>
            <item><title>Fine</title><enclosure url="http://x.example/f.mp3"/></item>
            """)
        let feed = try Fixtures.parse(xml)
        #expect(!feed.episodes.contains { $0.enclosureURL.hasSuffix("b.mp3") })
        #expect(feed.episodes.contains { $0.title == "Fine" })
        #expect(feed.warnings.contains { $0.contains("left out") })
    }

    @Test func rejectsADocumentWithNothingIntact() {
        for text in [
            "<rss><channel><title>Show</title><item><enclosure url=\"http://x.example/a",
            "<rss><channel><item><title>x</title><enclosure url='http://x.example/a.mp3'/>",
            "<<<>>> & \u{0}",
        ] {
            #expect(throws: FeedError.self, "\(text)") { try Fixtures.parse(text) }
        }
    }

    @Test func aRecoveredFeedWithoutItemsIsNoError() throws {
        // Well-formed apart from one bare `<`, no items: an empty show, not
        // a failure (only a truncated or damaged item makes one).
        let feed = try Fixtures.parse(
            "<rss><channel><title>Show</title><description>a < b</description></channel></rss>")
        #expect(feed.title == "Show")
        #expect(feed.episodes.isEmpty)
    }

    @Test func recoversAStrayAmpersandInsideAnEnclosureURL() throws {
        let feed = try Fixtures.parse(
            Fixtures.rss(Fixtures.item("A", url: "http://x.example/a.mp3?utm_source=x&utm_medium=rss&amp;k=1")))
        #expect(feed.episodes.map(\.enclosureURL) == ["http://x.example/a.mp3?utm_source=x&utm_medium=rss&k=1"])
    }

    // MARK: - Private helpers

    /// The offsets just past each occurrence of `marker`.
    private static func ends(of marker: String, in bytes: [UInt8]) -> [Int] {
        let needle = Array(marker.utf8)
        return bytes.indices.filter { bytes[$0...].starts(with: needle) }.map { $0 + needle.count }
    }
}
