import Feeds
import Foundation
import TestSupport
import Testing

/// Time and memory. Timings are printed, never asserted (they depend on the
/// machine and the build); memory growth under attack is asserted with a
/// wide margin, since an expansion would show up as gigabytes. Serialized so
/// the two memory-heavy tests do not overlap.
@Suite(.serialized) struct ResourceUseTests {
    // MARK: - Fixtures

    /// A feed with 10,000 realistic items (show notes, tracking URL, iTunes
    /// and Podcasting 2.0 tags), about 15 MB.
    static let largeFeed: [UInt8] = {
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" \(Fixtures.namespaces)><channel>
            <title>Ten Thousand Episodes</title><lastBuildDate>Mon, 01 Jan 2024 00:00:00 +0000</lastBuildDate>
            <itunes:image href="https://cdn.example.org/cover.jpg"/>

            """
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let notes = String(
            repeating: "<p>Show notes with <a href=\"https://example.org/\">links</a> &amp; more.</p>", count: 8)
        for number in 0..<10_000 {
            let day = 1 + number % 28
            let month = months[number % 12]
            xml += """
                <item><title>Episode \(number): Guests &amp; “Quotes” / Slashes</title>
                <link>https://example.org/episodes/\(number)</link>
                <guid isPermaLink="false">urn:uuid:5f2b1c3e-0000-4000-8000-\(String(100_000_000_000 + number))</guid>
                <pubDate>Mon, \(day) \(month) \(2000 + number / 400) 10:00:00 PST</pubDate>
                <description><![CDATA[\(notes)]]></description>
                <enclosure url="https://dts.podtrac.com/redirect.mp3/cdn.example.org/episodes/\(number).mp3?dest-id=171666&amp;s=3" length="\(50_000_000 + number)" type="audio/mpeg"/>
                <itunes:duration>01:02:03</itunes:duration><itunes:episode>\(number)</itunes:episode>
                <itunes:image href="https://cdn.example.org/art/\(number).jpg"/>
                <podcast:transcript url="https://cdn.example.org/episodes/\(number).vtt" type="text/vtt"/>
                <podcast:chapters url="https://cdn.example.org/episodes/\(number).json" type="application/json+chapters"/>
                </item>

                """
        }
        xml += "</channel></rss>\n"
        return Array(xml.utf8)
    }()

    // MARK: - Parse time and memory

    @Test func parsesATenThousandEpisodeFeed() throws {
        let bytes = Self.largeFeed
        var feed = ParsedFeed()
        let start = ContinuousClock.now
        let growth = try ProcessMemory.peakGrowth {
            feed = try FeedParser.parse(bytes, baseURL: Fixtures.base)
        }
        let elapsed = ContinuousClock.now - start
        #expect(feed.episodes.count == 10_000)
        #expect(feed.warnings.isEmpty)
        #expect(feed.episodes.allSatisfy { $0.transcripts.count == 1 && $0.chapters != nil && $0.published != nil })
        print(
            "10k-episode feed: \(bytes.count / 1024) KB parsed in \(Self.milliseconds(elapsed)), "
                + "peak RSS growth \(ProcessMemory.megabytes(growth)), "
                + "process peak \(ProcessMemory.megabytes(ProcessMemory.peakResidentBytes()))")
    }

    @Test func parsesATenThousandEpisodeFeedThatNeedsRepairs() throws {
        // One bare `&` in the channel title sends the whole feed through the
        // repair and the recovering parse.
        var bytes = Self.largeFeed
        let title = Array("Ten Thousand Episodes".utf8)
        let index = try #require((0..<bytes.count).first { bytes[$0...].starts(with: title) })
        bytes.replaceSubrange(index..<(index + 3), with: Array("T &".utf8))
        var feed = ParsedFeed()
        let start = ContinuousClock.now
        let growth = try ProcessMemory.peakGrowth {
            feed = try FeedParser.parse(bytes, baseURL: Fixtures.base)
        }
        let elapsed = ContinuousClock.now - start
        #expect(feed.episodes.count == 10_000)
        #expect(feed.title == "T & Thousand Episodes")
        print(
            "10k-episode feed with a stray '&' (strict, repair, recover): parsed in \(Self.milliseconds(elapsed)), "
                + "peak RSS growth \(ProcessMemory.megabytes(growth))")
    }

    /// Every item of the two largest corpus feeds has one enclosure: each
    /// becomes an episode.
    @Test(.needsCorpus) func parsesTheLargestCorpusFeeds() throws {
        for (file, items) in [("rss-parser/giantbomb-podcast.rss", 730), ("node-podcast-parser/se-radio.xml", 249)] {
            let bytes = try Corpus.bytes(file)
            var feed = ParsedFeed()
            let start = ContinuousClock.now
            let growth = try ProcessMemory.peakGrowth {
                feed = try FeedParser.parse(bytes, baseURL: Corpus.baseURL(for: file))
            }
            let elapsed = ContinuousClock.now - start
            #expect(feed.episodes.count == items, "\(file)")
            #expect(feed.warnings == [], "\(file): \(feed.warnings)")
            #expect(Set(feed.episodes.map(\.enclosureURL)).count > items * 9 / 10, "\(file): distinct enclosures")
            print(
                "\(file): \(bytes.count / 1024) KB, \(feed.episodes.count) episodes, parsed in "
                    + "\(Self.milliseconds(elapsed)), peak RSS growth \(ProcessMemory.megabytes(growth))")
        }
    }

    // MARK: - Attacks

    @Test func entityAttacksAllocateAlmostNothing() throws {
        // Expanded, these are 3 GB and 2.6 GB; refused, they cost about
        // their own size. 32 MB leaves room for other suites running
        // meanwhile (and for a sanitizer's quarantine).
        let limit = 32 << 20
        let attacks: [(String, [UInt8])] = [
            ("billion laughs", Array(FeedSafetyTests.billionLaughs.utf8)),
            ("billion laughs in UTF-16", Fixtures.utf16LittleEndian(FeedSafetyTests.billionLaughs)),
            ("quadratic blowup", Array(FeedSafetyTests.quadraticBlowup.utf8)),
            ("quadratic blowup in UTF-16", Fixtures.utf16BigEndian(FeedSafetyTests.quadraticBlowup)),
        ]
        for (name, bytes) in attacks {
            let growth = ProcessMemory.peakGrowth {
                #expect(throws: FeedError.self) { try FeedParser.parse(bytes, baseURL: Fixtures.base) }
            }
            print("\(name): \(bytes.count / 1024) KB, peak RSS growth \(ProcessMemory.megabytes(growth))")
            if let growth {
                #expect(growth < limit, "\(name): \(ProcessMemory.megabytes(growth))")
            }
        }
    }

    // MARK: - Private helpers

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = (seconds * 10_000 + attoseconds / 100_000_000_000_000)
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
