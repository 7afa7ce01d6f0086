import Feeds
import Foundation
import Logging
import PodFS
import RangeCache
import TestSupport
import Testing

/// How a large show folder is built and refreshed: a 10,000-episode feed
/// (each with a transcript and chapters) and the largest real feed of the
/// corpus. Times and memory are printed for the README's performance note,
/// never asserted (shared, noisy machine); what is asserted is that every
/// file is there, uniquely named, and that a refresh renames nothing.
@Suite(.serialized) struct LayoutScaleTests {
    // MARK: - Fixtures

    /// 10,000 realistic items, about 15 MB (like FeedsTests' large feed).
    static let largeFeed: [UInt8] = {
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
                 xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel>
            <title>Ten Thousand Episodes</title><itunes:image href="https://cdn.example.org/cover.jpg"/>

            """
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let notes = String(repeating: "<p>Show notes with <a href=\"https://example.org/\">links</a>.</p>", count: 8)
        for number in 0..<10_000 {
            // Every title twice a day: collisions to number.
            xml += """
                <item><title>Episode \(number / 2): Guests &amp; Slashes / More</title>
                <guid isPermaLink="false">urn:uuid:\(number)</guid>
                <pubDate>Mon, \(1 + number % 28) \(months[number % 12]) \(2000 + number / 400) 10:00:00 PST</pubDate>
                <description><![CDATA[\(notes)]]></description>
                <enclosure url="https://dts.podtrac.com/redirect.mp3/cdn.example.org/e/\(number).mp3?s=3" length="\(50_000_000 + number)" type="audio/mpeg"/>
                <podcast:transcript url="https://cdn.example.org/e/\(number).vtt" type="text/vtt"/>
                <podcast:chapters url="https://cdn.example.org/e/\(number).json" type="application/json+chapters"/>
                </item>

                """
        }
        xml += "</channel></rss>\n"
        return Array(xml.utf8)
    }()

    private var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    // MARK: - Tests

    @Test func aTenThousandEpisodeFolderIsBuiltAndRefreshedWhole() throws {
        try measure(name: "10k-episode feed", bytes: Self.largeFeed, url: "https://feeds.example/10k.xml") {
            #expect($0.episodes.count == 10_000)
            #expect($0.extras.count == 20_001)
        }
    }

    @Test(.needsCorpus) func theLargestCorpusFeedIsBuiltAndRefreshedWhole() throws {
        let path = Corpus.directory.appendingPathComponent("rss-parser/giantbomb-podcast.rss").path
        let bytes = try #require(FileManager.default.contents(atPath: path), "no corpus at \(path)")
        try measure(name: "rss-parser/giantbomb-podcast.rss", bytes: Array(bytes), url: "https://feeds.example/gb.xml") {
            #expect($0.episodes.count > 500)
        }
    }

    // MARK: - Private helpers

    /// Parses, lays out, builds a catalogue over a fresh index, lists, and
    /// refreshes with one new episode; prints each step's time and the peak
    /// memory growth.
    private func measure(
        name: String, bytes: [UInt8], url: String, check: (Catalog.Show) throws -> Void
    ) throws {
        let directory = NSTemporaryDirectory() + "podfs-scale-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let index = try CacheIndex(directory: directory, logger: logger)
        var times: [(String, Duration)] = []
        func timed<T>(_ step: String, _ body: () throws -> T) rethrows -> T {
            let start = ContinuousClock.now
            defer { times.append((step, ContinuousClock.now - start)) }
            return try body()
        }
        var catalog: Catalog?
        var feed = ParsedFeed()
        let growth = try Self.peakGrowth {
            feed = try timed("parse") { try FeedParser.parse(bytes, baseURL: url) }
            let layout = timed("layout") { ShowLayout(feedURL: url, feed: feed, directoryName: "Show", logger: logger) }
            #expect(!layout.playlist().isEmpty)
            catalog = try timed("catalogue (first mount: register in the index)") {
                try Catalog(feeds: [(url: url, feed: feed)], index: index, logger: logger)
            }
        }
        let catalogue = try #require(catalog)
        let show = try #require(catalogue.shows.first)
        try check(show)
        let names = try #require(timed("list the folder") { catalogue.children(of: show.inode) })
        #expect(Set(names.map(\.name)).count == names.count, "every name is unique")
        // A refresh that adds one episode at the top.
        var next = feed
        var newest = try #require(feed.episodes.first)
        newest.guid = "brand-new"
        newest.published = (feed.episodes.compactMap(\.published).max() ?? 0) + 86_400
        next.episodes.insert(newest, at: 0)
        let change = try timed("refresh with one new episode") { try catalogue.update(url: url, feed: next) }
        #expect(change.addedNames.count == 1 + newest.transcripts.count + (newest.chapters == nil ? 0 : 1))
        #expect(change.removedNames.isEmpty)
        let after = try #require(catalogue.children(of: show.inode))
        let kept = Set(after.map(\.name))
        #expect(names.allSatisfy { kept.contains($0.name) }, "no file was renamed")
        let steps = times.map { "\($0.0) \(Self.milliseconds($0.1))" }.joined(separator: ", ")
        print(
            "\(name): \(bytes.count / 1024) KB, \(show.episodes.count) episodes, \(names.count) files; \(steps); "
                + "peak RSS growth (parse + layout + catalogue) \(Self.megabytes(growth))")
    }

    /// How far the peak resident size rose during `body` (`VmHWM` reset
    /// first through `clear_refs`), in bytes.
    private static func peakGrowth(_ body: () throws -> Void) rethrows -> Int? {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .ascii)
        let before = field("VmRSS")
        try body()
        guard let before, let peak = field("VmHWM") else { return nil }
        return max(0, peak - before)
    }

    private static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).filter(\.isNumber)).map { $0 * 1024 }
        }
        return nil
    }

    private static func megabytes(_ bytes: Int?) -> String {
        guard let bytes else { return "unknown" }
        return "\(bytes * 10 / (1 << 20) / 10).\(bytes * 10 / (1 << 20) % 10) MB"
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10_000 + attoseconds / 100_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
