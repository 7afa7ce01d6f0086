import Feeds
import Foundation
import TestSupport
import Testing

/// The parser against 58 real and hand-written feeds and the expectations
/// other parsers' authors wrote for them (see `Tests/Corpus/feeds/README.md`).
@Suite(.needsCorpus) struct CorpusTests {
    // MARK: - Every feed

    /// Feeds that are expected to fail, with the reason. Everything else in
    /// `feed-inventory.tsv` must parse.
    static let expectedFailures: [String: String] = [
        // feedparser's "Incomplete CDATA block": the file ends inside the
        // title of its only item. libxml2's recover mode returns the channel
        // with a cut-off item; podfs leaves out the cut-off item, and a
        // damaged document with nothing intact is an error, so a refresh
        // that fetched a truncated body keeps the previous listing.
        // (feedparser: bozo; libxml2_recover in the inventory: 1 item, 0
        // enclosures.)
        "feedparser/illformed/rss_incomplete_cdata.xml": "not well-formed XML",
        // feedparser's "invalid bytes with BOM": no items, and the file ends
        // in `</rss` without its `>`. A damaged document that ends early and
        // shows no episode looks exactly like a body cut off before its
        // first item, so it is an error too. (feedparser: bozo; libxml2
        // recover: 0 items.) The invalid UTF-8 itself is repaired.
        "feedparser/encoding/bozo_invalid-bytes-with-bom.xml": "not well-formed XML",
    ]

    /// Items with an enclosure, from libxml2's own count in
    /// `feed-inventory.tsv` (measured with lxml: items, and `<enclosure>`
    /// elements), where the two counts agree on one number.
    static func expectedEpisodeCount(_ row: [String: String]) -> Int {
        switch row["file"] {
        // `<media:content>` only, which podfs accepts as the enclosure.
        case "podcastparser/mediarss.rss": return 1
        // The only `<enclosure>` has no `url` attribute.
        case "podcastparser/no_url.rss": return 0
        // Taverncast items 17 and 18 ("Geekistry: You Can See the Strings"
        // and "... Lowatus of Borg (extended version)") carry the same GUID
        // and the same enclosure URL: one file, one episode, the first item
        // kept. (The catalogue could not give them two cache files anyway.)
        case "rss-parser/itunes-missing-image.rss": return 130
        default:
            let items = Int(row["libxml2_items"] ?? "") ?? 0
            let enclosures = Int(row["libxml2_enclosures"] ?? "") ?? 0
            return min(items, enclosures)
        }
    }

    @Test func everyCorpusFeedParsesOrFailsWithAReason() throws {
        let inventory = try Corpus.table("feed-inventory.tsv")
        #expect(inventory.count == 58)
        var failures: [String: String] = [:]
        var episodeTotal = 0
        for row in inventory {
            let file = try #require(row["file"])
            let bytes = try Corpus.bytes(file)
            do {
                let feed = try FeedParser.parse(bytes, baseURL: Corpus.baseURL(for: file))
                episodeTotal += feed.episodes.count
                for episode in feed.episodes {
                    #expect(episode.enclosureURL.hasPrefix("http://") || episode.enclosureURL.hasPrefix("https://"))
                    #expect(!episode.enclosureURL.contains(where: { $0 == " " || $0 == "\\" }))
                }
                #expect(feed.episodes.count == Self.expectedEpisodeCount(row), "\(file)")
            } catch {
                failures[file] = error.message
                if let prefix = Self.expectedFailures[file] {
                    #expect(error.message.hasPrefix(prefix), "\(file): \(error.message)")
                }
            }
        }
        print("corpus: \(inventory.count - failures.count) of \(inventory.count) feeds parse, \(episodeTotal) episodes")
        for (file, message) in failures.sorted(by: { $0.key < $1.key }) {
            print("corpus: \(file) fails: \(message)")
        }
        #expect(Set(failures.keys) == Set(Self.expectedFailures.keys))
    }

    @Test func parsesConcurrentlyWithTheSameResults() async throws {
        let files = ["rss-parser/giantbomb-podcast.rss", "partytime/no-agenda.xml", "feedkit/Ampersand.xml"]
        let inputs = try files.map { (try Corpus.bytes($0), Corpus.baseURL(for: $0)) }
        let serial = try inputs.map { try FeedParser.parse($0.0, baseURL: $0.1) }
        try await withThrowingTaskGroup(of: (Int, ParsedFeed).self) { group in
            for round in 0..<24 {
                let index = round % inputs.count
                let (bytes, base) = inputs[index]
                group.addTask { (index, try FeedParser.parse(bytes, baseURL: base)) }
            }
            for try await (index, feed) in group {
                #expect(feed == serial[index])
            }
        }
    }

    // MARK: - Upstream expectations

    /// Feeds where an upstream parser keeps fewer episodes than podfs, and why.
    static let upstreamDropsEpisodes: [String: String] = [
        "podcastparser/max_episodes.rss": "the upstream test truncates to max_episodes=1",
        "podcastparser/no_title_multi_enclosure.rss":
            "podcastparser drops an item without title and with several enclosures",
    ]

    /// Compares every feed that has an upstream expected-output file with
    /// what podfs parses, field by field, counting what is asserted and what
    /// is skipped because it tests another parser's convention.
    @Test func matchesUpstreamExpectations() throws {
        let feeds = try Corpus.table("expected-feeds.tsv")
        let rows = try Corpus.table("expected-episodes.tsv")
        #expect(feeds.count == 30)
        var tally = Tally()
        for feedRow in feeds {
            let file = try #require(feedRow["feed_file"])
            let source = feedRow["source"] ?? ""
            let feed = try FeedParser.parse(try Corpus.bytes(file), baseURL: Corpus.baseURL(for: file))
            compareTitle(feed.title, feedRow["feed_title"] ?? "", source: source, file: file, tally: &tally)
            let expected = Dictionary(grouping: rows.filter { $0["feed_file"] == file }) {
                Int($0["episode_index"] ?? "") ?? -1
            }
            .sorted { $0.key < $1.key }
            .map(\.value)
            .filter { episodeRows in episodeRows.contains { Self.expectedURL($0) != nil } }
            if let reason = Self.upstreamDropsEpisodes[file] {
                #expect(feed.episodes.count > expected.count, "\(file)")
                tally.skip("episode count: \(reason)")
            } else {
                #expect(feed.episodes.count == expected.count, "\(file)")
                tally.assert("episode count")
            }
            var matched = Set<Int>()
            for episodeRows in expected {
                guard let index = Self.match(episodeRows, in: feed.episodes, excluding: matched) else {
                    Issue.record("\(file): no episode with an enclosure in \(episodeRows.compactMap(Self.expectedURL))")
                    continue
                }
                matched.insert(index)
                tally.assert("enclosure URL")
                compare(feed.episodes[index], episodeRows, source: source, file: file, tally: &tally)
            }
        }
        print("upstream expectations: \(tally.assertedTotal) asserted, \(tally.skippedTotal) skipped")
        for (what, count) in tally.asserted.sorted(by: { $0.key < $1.key }) {
            print("  asserted \(count) × \(what)")
        }
        for (why, count) in tally.skipped.sorted(by: { $0.key < $1.key }) {
            print("  skipped \(count) × \(why)")
        }
        #expect(tally.assertedTotal > 3 * tally.skippedTotal)
    }

    // MARK: - Private helpers

    /// Counts of asserted and skipped expectations, by kind.
    private struct Tally {
        var asserted: [String: Int] = [:]
        var skipped: [String: Int] = [:]
        var assertedTotal: Int { asserted.values.reduce(0, +) }
        var skippedTotal: Int { skipped.values.reduce(0, +) }

        mutating func assert(_ what: String) { asserted[what, default: 0] += 1 }
        mutating func skip(_ why: String) { skipped[why, default: 0] += 1 }
    }

    /// The row's enclosure URL as podfs would see it: podcastparser resolved
    /// relative URLs against `file://tests/data/`, the test uses http.
    private static func expectedURL(_ row: [String: String]) -> String? {
        guard var url = row["enclosure_url"], !url.isEmpty else { return nil }
        if url.hasPrefix("file://tests/data/") {
            url = "http://" + url.dropFirst("file://".count)
        }
        return url.hasPrefix("http://") || url.hasPrefix("https://") ? url : nil
    }

    /// The parsed episode carrying one of the expected enclosure URLs,
    /// preferring one whose title matches too.
    private static func match(
        _ episodeRows: [[String: String]], in episodes: [ParsedEpisode], excluding used: Set<Int>
    ) -> Int? {
        let urls = Set(episodeRows.compactMap(expectedURL))
        let title = episodeRows.first?["episode_title"]
        let candidates = episodes.indices.filter { !used.contains($0) && urls.contains(episodes[$0].enclosureURL) }
        return candidates.first { episodes[$0].title == title } ?? candidates.first
    }

    private func compareTitle(_ ours: String?, _ expected: String, source: String, file: String, tally: inout Tally) {
        let baseName = file.split(separator: "/").last?.split(separator: ".").first.map(String.init)
        if ours == nil, source == "podcastparser", expected == baseName {
            tally.skip("feed title: podcastparser falls back to the file name")
        } else if ours == nil, expected.isEmpty {
            tally.assert("feed title")
        } else {
            #expect(ours == expected, "\(file) feed title")
            tally.assert("feed title")
        }
    }

    private func compare(
        _ episode: ParsedEpisode, _ episodeRows: [[String: String]], source: String, file: String,
        tally: inout Tally
    ) {
        guard let row = episodeRows.first(where: { Self.expectedURL($0) == episode.enclosureURL }) else { return }
        let context = "\(file) #\(row["episode_index"] ?? "?") \(episode.enclosureURL)"

        // Length: podcastparser writes -1 for unknown, the others the raw
        // attribute; podfs keeps only positive numbers.
        let rawLength = (row["enclosure_length"] ?? "").trimmingCharacters(in: .whitespaces)
        let expectedLength = Int64(rawLength).flatMap { $0 > 0 ? $0 : nil }
        #expect(episode.enclosureLength == expectedLength, "\(context) length")
        tally.assert("enclosure length")

        let expectedType = (row["enclosure_type"] ?? "").lowercased()
        if episode.enclosureType == nil, source == "podcastparser", expectedType == "application/octet-stream" {
            tally.skip("enclosure type: podcastparser's default for a missing type")
        } else {
            #expect(episode.enclosureType == (expectedType.isEmpty ? nil : expectedType), "\(context) type")
            tally.assert("enclosure type")
        }

        let expectedDate = (row["published_utc"] ?? "").isEmpty ? nil : FeedDate.parse(row["published_utc"] ?? "")
        #expect(episode.published == expectedDate, "\(context) published \(row["published_raw"] ?? "")")
        tally.assert("published")

        let expectedTitle = row["episode_title"] ?? ""
        if episode.title == nil, source == "podcastparser" {
            tally.skip("episode title: podcastparser falls back to the enclosure's file name")
        } else {
            // rss-parser keeps surrounding white space; podfs trims it.
            let trimmed = expectedTitle.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(episode.title == (trimmed.isEmpty ? nil : trimmed), "\(context) title")
            tally.assert("episode title")
        }

        let expectedGUID = row["guid"] ?? ""
        if episode.guid == nil, source == "podcastparser" {
            tally.skip("guid: podcastparser falls back to the link or enclosure URL")
        } else {
            #expect(episode.guid == (expectedGUID.isEmpty ? nil : expectedGUID), "\(context) guid")
            tally.assert("guid")
        }
    }
}
