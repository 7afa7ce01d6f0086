import Feeds
import TestSupport
import Testing

/// Seeded random damage (byte flips, inserted NULs and markup characters,
/// cuts, repeated slices) to small real feeds: the parser never crashes, and
/// whatever it returns holds podfs's promises about URLs.
@Suite(.needsCorpus) struct FeedMutationTests {
    // MARK: - Tests

    /// Each feed with the fewest of its 400 mutations that must parse and
    /// URLs that must be checked (the sequence is seeded: about half of
    /// what parses today). The UTF-16 and bare-ampersand feeds have no URL:
    /// they run damage through the decoder and the repair, which must not
    /// crash.
    @Test(arguments: [
        ("node-podcast-parser/apple-example.xml", 200, 1000), ("podcastparser/multi_enclosures.rss", 60, 50),
        ("gofeed/issue_305_bare_ampersand.xml", 90, 0), ("feedparser/encoding/utf-16le-bom.xml", 25, 0),
        ("rss-parser/narro.rss", 100, 250),
    ])
    func damagedFeedsNeverYieldABadURL(_ file: String, minimumParsed: Int, minimumURLs: Int) throws {
        let original = try Corpus.bytes(file)
        var generator = SeededGenerator(state: UInt64(truncatingIfNeeded: file.utf8.count) &* 7919)
        var parsed = 0
        var urlsChecked = 0
        for _ in 0..<400 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                mutate(&bytes, using: &generator)
            }
            guard let feed = try? FeedParser.parse(bytes, baseURL: Corpus.baseURL(for: file)) else { continue }
            parsed += 1
            let urls =
                feed.episodes.map(\.enclosureURL) + feed.episodes.compactMap(\.imageURL)
                + feed.episodes.flatMap { $0.transcripts.map(\.url) } + [feed.imageURL].compactMap { $0 }
            urlsChecked += urls.count
            for url in urls {
                #expect(url.hasPrefix("http://") || url.hasPrefix("https://"), "\(file): \(url)")
                #expect(url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }, "\(file): \(url)")
                // A valid URL stays itself when checked again.
                #expect(FeedURL.resolveHTTP(url, base: "") == url, "\(file): \(url)")
            }
        }
        // The checks ran on many results, not on the one that parsed.
        print("\(file): \(parsed) of 400 mutations parsed, \(urlsChecked) URLs checked")
        #expect(parsed >= minimumParsed, "\(file): only \(parsed) of 400 mutations parsed")
        #expect(urlsChecked >= minimumURLs, "\(file): only \(urlsChecked) URLs checked")
    }

    // MARK: - Private helpers

    private func mutate(_ bytes: inout [UInt8], using generator: inout SeededGenerator) {
        guard !bytes.isEmpty else { return }
        let position = Int.random(in: 0..<bytes.count, using: &generator)
        switch Int.random(in: 0..<6, using: &generator) {
        case 0:
            bytes[position] = UInt8.random(in: 0...255, using: &generator)
        case 1:
            bytes.insert(0, at: position)
        case 2:
            let insert: [[UInt8]] = [[0x26], [0x3C], [0x3E], [0x22], Array("]]>".utf8), Array("<![CDATA[".utf8)]
            bytes.insert(contentsOf: insert.randomElement(using: &generator)!, at: position)
        case 3:
            bytes.removeSubrange(position...)
        case 4:
            let end = min(bytes.count, position + Int.random(in: 1...64, using: &generator))
            bytes.removeSubrange(position..<end)
        default:
            let end = min(bytes.count, position + Int.random(in: 1...200, using: &generator))
            let slice = bytes[position..<end]
            bytes.insert(contentsOf: slice, at: Int.random(in: 0...bytes.count, using: &generator))
        }
    }
}
