import Feeds
import Foundation
import TestSupport
import Testing

/// The corpus against the upstream assertions that are not in the TSV
/// tables: the facts node-podcast-parser's and partytime's tests check
/// (copied into `feed-inventory.tsv`, column `upstream_expectations`),
/// feedparser's `Expect:` lines, rss-parser's images in its JSON files, and
/// the Podcasting 2.0 links in the partytime captures.
@Suite(.needsCorpus) struct CorpusAssertionTests {
    // MARK: - Inventory assertions

    /// Upstream assertions podfs does not share, and why.
    static let differentByDesign: [String: String] = [
        // partytime reads `<podcast:liveItem>` (an endless live stream);
        // podfs shows only `<item>`s, whose files have an end.
        "partytime/podverse-test-feed.xml 4 podcast:liveItem": "live items are not episodes"
    ]

    @Test func matchesNodePodcastParserAndPartytimeAssertions() throws {
        var checked = 0
        var skipped: [String] = []
        for row in try Corpus.table("feed-inventory.tsv") {
            let file = try #require(row["file"])
            // " | " also occurs inside titles, so split on the next label.
            let facts = (" | " + (row["upstream_expectations"] ?? "")).components(separatedBy: " | upstream ")
                .filter { $0.hasPrefix("test: ") }
                .map { String($0.dropFirst("test: ".count)) }
            guard !facts.isEmpty else { continue }
            let feed = try FeedParser.parse(try Corpus.bytes(file), baseURL: Corpus.baseURL(for: file))
            for fact in facts {
                if Self.differentByDesign.keys.contains(where: { "\(file) \(fact)".hasPrefix($0) }) {
                    skipped.append("\(file): \(fact)")
                } else {
                    check(fact, against: feed, file: file)
                    checked += 1
                }
            }
        }
        print("upstream test assertions: \(checked) checked, \(skipped.count) skipped by design")
        #expect(checked >= 25)
        #expect(skipped.count == Self.differentByDesign.count)
    }

    // MARK: - feedparser

    @Test func matchesFeedparserExpectations() throws {
        func parse(_ file: String) throws -> ParsedFeed {
            try FeedParser.parse(try Corpus.bytes("feedparser/" + file), baseURL: Corpus.baseURL(for: file))
        }
        // `not bozo`: well-formed, so podfs reads it without repairs.
        for file in ["encoding/utf-16le-bom.xml", "encoding/utf-8-bom.xml"] {
            #expect(try parse(file).warnings == [], "\(file)")
        }
        let euro = try parse("encoding/x80_windows-1252.xml")
        #expect(euro.title == "\u{20AC}")
        #expect(euro.warnings == [])
        let doctype = try parse("illformed/always_strip_doctype.xml")
        #expect(doctype.title == "found")
        #expect(doctype.warnings == [])
        // `bozo`: ill-formed. podfs reads what is intact and says so...
        #expect(try parse("illformed/chardet/koi8r.xml").warnings.first?.hasPrefix("not well-formed XML") == true)
        // ...except where the document ends early with no episode intact:
        // the mount keeps the previous listing (see CorpusTests).
        #expect(throws: FeedError.self) { try parse("illformed/rss_incomplete_cdata.xml") }
        #expect(throws: FeedError.self) { try parse("encoding/bozo_invalid-bytes-with-bom.xml") }
        // feedparser calls an undeclared prefix bozo; libxml2 reports only a
        // namespace error, which is no well-formedness error, so podfs
        // reads it without repairs.
        #expect(try parse("illformed/undeclared_namespace.xml").warnings == [])
        // `Expect: 1` (must not crash) with a Greek date: the document is
        // well-formed ISO-8859-7, the date does not parse, and nothing else
        // is there to lose or invent.
        let greekDate = try parse("illformed/http_high_bit_date.xml")
        #expect(greekDate.lastBuildDate == nil, "a Greek date is no date")
        #expect(greekDate.warnings == [], "\(greekDate.warnings)")
        #expect(greekDate.title == nil && greekDate.episodes.isEmpty && greekDate.imageURL == nil)
        // KOI8-R without a declaration is not UTF-8: the repair reads the
        // bytes as windows-1252 (mojibake, but every character is there).
        // feedparser guesses KOI8-R with chardet; podfs does not guess.
        let koi8 = try parse("illformed/chardet/koi8r.xml")
        #expect(koi8.warnings.contains { $0.contains("windows-1252") })
    }

    // MARK: - rss-parser images

    /// rss-parser's `feed.itunes.image` (else `feed.image.url`) and each
    /// item's `itunes.image`, against `imageURL`.
    @Test func matchesRSSParserImages() throws {
        var checked = 0
        for row in try Corpus.table("expected-feeds.tsv") where row["source"] == "rss-parser" {
            let file = try #require(row["feed_file"])
            let expected = try #require(row["expected_file"])
            let object = try JSONSerialization.jsonObject(with: Data(try Corpus.bytes(expected)))
            let json = try #require((object as? [String: Any])?["feed"] as? [String: Any])
            let feed = try FeedParser.parse(try Corpus.bytes(file), baseURL: Corpus.baseURL(for: file))
            let itunesImage = (json["itunes"] as? [String: Any])?["image"] as? String
            let rssImage = (json["image"] as? [String: Any])?["url"] as? String
            #expect(feed.imageURL == itunesImage ?? rssImage, "\(file)")
            let items = json["items"] as? [[String: Any]] ?? []
            for item in items {
                let url = (item["enclosure"] as? [String: Any])?["url"] as? String
                guard let episode = feed.episodes.first(where: { $0.enclosureURL == url }) else { continue }
                let image = (item["itunes"] as? [String: Any])?["image"] as? String
                #expect(episode.imageURL == image, "\(file) \(url ?? "")")
                checked += 1
            }
        }
        #expect(checked >= 760)
    }

    // MARK: - Podcasting 2.0

    @Test func readsEveryTranscriptAndChaptersLinkInThePartytimeCaptures() throws {
        for file in ["partytime/no-agenda.xml", "partytime/themnshow.xml"] {
            let bytes = try Corpus.bytes(file)
            let text = String(decoding: bytes, as: UTF8.self)
            let feed = try FeedParser.parse(bytes, baseURL: Corpus.baseURL(for: file))
            let transcripts = feed.episodes.flatMap(\.transcripts)
            let chapters = feed.episodes.compactMap(\.chapters)
            #expect(transcripts.count == text.components(separatedBy: "<podcast:transcript ").count - 1, "\(file)")
            #expect(chapters.count == text.components(separatedBy: "<podcast:chapters ").count - 1, "\(file)")
            #expect(transcripts.allSatisfy { $0.url.hasPrefix("http") && $0.type != nil })
        }
        let noAgenda = try FeedParser.parse(
            try Corpus.bytes("partytime/no-agenda.xml"), baseURL: Corpus.baseURL(for: "no-agenda.xml"))
        #expect(
            noAgenda.episodes.first?.transcripts == [
                ParsedTranscript(url: "https://mp3s.nashownotes.com/NA-1393-Captions.srt", type: "application/srt")
            ])
        #expect(
            noAgenda.episodes.first?.chapters
                == ParsedChapters(
                    url: "http://34.117.70.159/http%3Afeed.nashownotes.comrss.xml/http:1393.noagendanotes.com",
                    type: "application/json"))
    }

    // MARK: - Private helpers

    /// Checks one assertion as the inventory words it.
    private func check(_ fact: String, against feed: ParsedFeed, file: String) {
        if let count = Self.leadingNumber(fact), fact.contains(" episodes") || fact.contains(" items") {
            // partytime's `allowMissingGuid: false` count leaves out items
            // without a GUID; podfs keeps them (identity falls back to the
            // enclosure URL), so its count is the `true` one.
            if fact.contains("allowMissingGuid: false") {
                #expect(feed.episodes.filter { $0.guid != nil }.count == count, "\(file): \(fact)")
            } else {
                #expect(feed.episodes.count == count, "\(file): \(fact)")
            }
        } else if fact.hasPrefix("feed title ") {
            let title = Self.quoted(fact.dropFirst("feed title ".count))
            #expect(feed.title == title, "\(file): \(fact)")
        } else if fact.hasPrefix("newest episode") {
            // node-podcast-parser sorts newest first; so does this check.
            let newest = feed.episodes.max { ($0.published ?? .min) < ($1.published ?? .min) }
            let fields = Self.fields(fact)
            #expect(newest?.title == fields["title"], "\(file): title")
            #expect(newest?.enclosureURL == fields["url"], "\(file): url")
            #expect(newest?.enclosureType == fields["type"], "\(file): type")
            #expect(newest?.enclosureLength == fields["filesize"].flatMap { Int64($0) }, "\(file): filesize")
        } else if fact.hasPrefix("an episode enclosure url == ") {
            let url = String(fact.dropFirst("an episode enclosure url == ".count))
            // The inventory writes the URL as the test does, `&` unescaped.
            #expect(feed.episodes.contains { $0.enclosureURL == url }, "\(file): \(fact)")
        } else {
            Issue.record("\(file): unrecognised upstream assertion \(fact)")
        }
    }

    private static func leadingNumber(_ text: String) -> Int? {
        Int(text.prefix { $0.isNumber })
    }

    /// `'text'` or `"text"` at the start, with what follows dropped.
    private static func quoted(_ text: Substring) -> String? {
        guard let quote = text.first, quote == "'" || quote == "\"" else { return nil }
        let rest = text.dropFirst()
        return rest.firstIndex(of: quote).map { String(rest[..<$0]) }
    }

    /// `title='…' filesize=123 type=audio/mpeg url=…` as a dictionary.
    private static func fields(_ fact: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(fact)
        for key in ["title", "filesize", "type", "url"] {
            guard let start = rest.range(of: key + "=") else { continue }
            rest = rest[start.upperBound...]
            if let value = quoted(rest) {
                result[key] = value
                rest = rest.dropFirst(value.count + 2)
            } else {
                let value = rest.prefix { $0 != " " }
                if value != "undefined" { result[key] = String(value) }
                rest = rest.dropFirst(value.count)
            }
        }
        return result
    }
}
