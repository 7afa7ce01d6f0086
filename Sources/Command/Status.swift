import ArgumentParser
import Feeds
import Foundation
import Logging
import PodFS
import RangeCache

/// `podfs status`: what the cache holds, per feed and episode, read from the
/// index (read-only, so it works while a mount runs).
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the cache holds: per episode its size, cached bytes and a map of cached parts.",
        discussion: """
            Each map cell is a tenth of the episode: █ all cached, ▒ partly, ░ not at all. \
            What is cached plays offline. Safe to run while a mount is using the cache.
            """)

    @Option(name: .long, help: "The cache directory (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(name: .long, help: "Print JSON, with the exact cached byte ranges, for scripts.")
    var json = false

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        var logger = Logger(label: "podfs")
        logger.logLevel = .error
        let snapshot: [FeedSnapshot]
        do {
            snapshot = try CacheIndex(readingDirectory: directory, logger: logger).snapshot()
        } catch {
            Console.error("podfs: \(error)\n")
            throw ExitCode(1)
        }
        let report = CacheReport(directory: directory, snapshot: snapshot, logger: logger)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(try report.json(encoder))
        } else {
            print(report.text(), terminator: "")
            if let sync = SyncLoop.lastReport(directory: directory) { print(SyncLoop.describe(sync)) }
        }
    }
}

/// The cache's contents as `podfs status` shows them.
struct CacheReport: Encodable {
    struct Episode: Encodable {
        /// The file name in the mount, or `nil` for an episode no longer in
        /// the saved feed.
        var name: String?
        /// Without its secrets (`FeedURL.redacted`).
        var url: String
        var key: String
        /// The origin's length when known, else the feed's claim.
        var size: Int64
        /// Whether the origin told `size`; otherwise it is the feed's claim.
        var sizeConfirmed: Bool
        /// "episode", "cover", "transcript" or "chapters"; `nil` for an
        /// episode no longer in the saved feed.
        var kind: String?
        var cachedBytes: Int64
        /// Seconds since the epoch.
        var lastRead: Int64?
        var ranges: [[Int64]]
        /// Why its host was found to stitch ads per request (it serves
        /// different bytes per request), or `nil`.
        var unstable: String?
        /// Whether later ranges go to a pinned link (the end of the
        /// enclosure's redirect chain) rather than the enclosure URL.
        var pinned: Bool
        /// Whether its host stitches per request and it is not complete:
        /// its next read streams it whole from byte 0.
        var streaming: Bool
        /// Whether every byte of one variant is cached (kept as it is).
        var final: Bool

        /// Neither the origin nor the feed told a size (the feed gave none,
        /// or 0).
        var sizeUnknown: Bool { !sizeConfirmed && size == 0 }
    }

    /// How the last load or refresh of a feed went.
    struct Refresh: Encodable {
        /// Seconds since the epoch.
        var checkedAt: Int64
        var ok: Bool
        /// "loaded", "updated", "not modified", or why it failed.
        var detail: String
        /// A mount asked for the feed and has no answer yet; `ok` and
        /// `detail` tell how the check before went.
        var pending: Bool

        /// `pending`, `ok` or `failed`: the feed's state in one word.
        var state: String { pending ? "pending" : ok ? "ok" : "failed" }
    }

    struct Feed: Encodable {
        private enum CodingKeys: String, CodingKey {
            case url, title, fetchedAt, lastRefresh, episodes
        }

        /// Without its secrets (`FeedURL.redacted`): what is shown.
        var url: String
        /// As the index has it, with its secrets: for matching what a
        /// person typed, never shown.
        var fullURL: String
        /// The feed's title as the feed gives it (`text()` cleans it for a
        /// terminal), else its shown URL.
        var title: String
        /// When the saved copy of the feed was fetched (seconds since the epoch).
        var fetchedAt: Int64?
        /// The last load or refresh by a mount; `nil` when none was recorded.
        var lastRefresh: Refresh?
        /// Episodes, then the cover, transcripts and chapters files.
        var episodes: [Episode]
    }

    var cacheDirectory: String
    /// The cap the last mount used (`nil`: none, or never mounted).
    var sizeCap: Int64?
    var totalBytes: Int64
    var cachedBytes: Int64
    var feeds: [Feed]
    /// What the running (or last) mount keeps offline, as it wrote it
    /// (`Keeper.Report`); `nil` when no mount wrote one. With no mount
    /// running, its downloads are gone and what is complete is counted
    /// from the index.
    var keeping: Keeper.Report?
    /// Whether a mount (or a cache command) holds the cache now.
    var mountRunning: Bool

    init(directory: String, snapshot: [FeedSnapshot], logger: Logger) {
        cacheDirectory = directory
        sizeCap = (try? String(contentsOfFile: directory + "/cache-size", encoding: .utf8))
            .flatMap { Int64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let refreshes = FeedStatusStore.read(directory: directory)
        feeds = snapshot.map { snapshot in
            var feed = Self.feed(snapshot, logger: logger)
            feed.lastRefresh = refreshes[snapshot.url].map { Self.refresh($0, url: snapshot.url) }
            return feed
        }
        // Feeds a mount could never load (no copy kept) are in no index row:
        // they still get a line saying why.
        let known = Set(snapshot.map(\.url))
        for (url, record) in refreshes.sorted(by: { $0.key < $1.key }) where !known.contains(url) {
            feeds.append(Feed(
                url: FeedURL.redacted(url), fullURL: url, title: FeedURL.redacted(url), fetchedAt: nil,
                lastRefresh: Self.refresh(record, url: url), episodes: []))
        }
        keeping = Self.keeping(directory: directory)
        mountRunning = CacheLock.isHeld(directory: directory)
        if !mountRunning, let report = keeping { keeping = Self.asTheIndexHasIt(report, feeds: feeds) }
        totalBytes = feeds.reduce(0) { $0 + $1.episodes.reduce(0) { $0 + $1.size } }
        cachedBytes = feeds.reduce(0) { $0 + $1.episodes.reduce(0) { $0 + $1.cachedBytes } }
    }

    /// The JSON for scripts: titles as the feeds give them, with the
    /// characters a terminal would act on escaped (`TerminalText`).
    func json(_ encoder: JSONEncoder) throws -> String {
        TerminalText.escapingJSON(String(decoding: try encoder.encode(self), as: UTF8.self))
    }

    /// The human-readable table. Text from feeds and origins is cleaned
    /// for the terminal (`TerminalText`).
    func text() -> String {
        // Covers, transcripts and chapters are files of the cache too, and
        // so are files no longer in their feed (of no known kind).
        let files = feeds.reduce(0) { $0 + $1.episodes.count }
        let episodes = feeds.reduce(0) { $0 + $1.episodes.count { $0.kind == "episode" } }
        let others = files - episodes
        var out = "Cache \(TerminalText.clean(cacheDirectory)): \(episodes) episode\(episodes == 1 ? "" : "s")"
        out += others > 0 ? " and \(others) other file\(others == 1 ? "" : "s"), " : ", "
        out += "\(CacheMaintenance.bytes(cachedBytes)) cached "
        out += "of \(CacheMaintenance.bytes(totalBytes))\(Self.percent(cachedBytes, of: totalBytes))"
        if let cap = sizeCap {
            out += "; \(CacheMaintenance.bytes(cachedBytes)) of the \(CacheMaintenance.bytes(cap)) cap used\(Self.percent(cachedBytes, of: cap))\n"
        } else {
            out += "; no size cap\n"
        }
        out += Self.feedSummary(feeds)
        // Transcripts' and chapters' are learned when they are opened, and
        // would fill the line of a library that has them.
        let unsized = feeds.reduce(0) { $0 + $1.episodes.filter { $0.sizeUnknown && $0.kind == "episode" }.count }
        if unsized > 0 {
            out += "Episodes whose size is not known yet: \(unsized) (their feed gives none; podfs asks their hosts "
            out += "in the background, newest first, else learns it when one is first opened)\n"
        }
        if let keeping {
            let kept = Self.keepingText(keeping)
            out += kept
            if !kept.isEmpty, !mountRunning { out += "  (no mount is running: downloads go on at the next mount)\n" }
        }
        for feed in feeds {
            out += "\n\(TerminalText.clean(feed.title))  (\(TerminalText.clean(feed.url))"
            if let fetchedAt = feed.fetchedAt { out += ", feed saved \(Self.date(fetchedAt))" }
            out += ")\n"
            if let refresh = feed.lastRefresh {
                let detail = TerminalText.clean(refresh.detail)
                if refresh.pending {
                    out += "  pending: asked for, no answer yet (before: \(refresh.ok ? "ok" : detail))\n"
                } else {
                    out += "  last refresh: \(refresh.ok ? "ok" : "failed: \(detail)") (\(Self.date(refresh.checkedAt))"
                    out += refresh.ok ? ", \(detail))\n" : ")\n"
                }
            }
            let width = min(60, feed.episodes.map { ($0.name ?? $0.key).count }.max() ?? 0)
            for episode in feed.episodes {
                let name = TerminalText.clean(episode.name ?? "(no longer in the feed) \(episode.key)")
                let padded = name.count >= width ? name : name + String(repeating: " ", count: width - name.count)
                let size =
                    episode.sizeUnknown
                    ? "unknown" : CacheMaintenance.bytes(episode.size) + (episode.sizeConfirmed ? "" : "?")
                out += "  \(padded)  \(Self.leftPad(size, 11))  \(Self.leftPad(Self.percent(episode.cachedBytes, of: episode.size, bare: true), 4))"
                out += "  [\(Self.map(episode))]"
                if let lastRead = episode.lastRead { out += "  read \(Self.date(lastRead))" }
                let marks = Self.marks(episode)
                if !marks.isEmpty { out += "  " + marks }
                out += "\n"
            }
        }
        return out
    }

    // MARK: - Private helpers

    /// The last mount's report as the index has it now that no mount runs:
    /// no download goes on, and an episode or cover is complete when all
    /// its bytes are cached (a `cache clear` since, say, emptied them).
    private static func asTheIndexHasIt(_ report: Keeper.Report, feeds: [Feed]) -> Keeper.Report {
        var report = report
        report.downloading = []
        var complete = Set<String>()
        for feed in feeds {
            for episode in feed.episodes where episode.sizeConfirmed && episode.size > 0 && episode.cachedBytes >= episode.size {
                complete.insert(episode.key)
            }
        }
        for index in report.shows.indices {
            if let keys = report.shows[index].keys { report.shows[index].complete = keys.count { complete.contains($0) } }
        }
        if let covers = report.keptCovers { report.coversComplete = covers.count { complete.contains($0) } }
        return report
    }

    /// The keeper's report in the cache directory, if a mount wrote one.
    private static func keeping(directory: String) -> Keeper.Report? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + Keeper.reportFile) else { return nil }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try? decoder.decode(Keeper.Report.self, from: data)
    }

    /// `Kept offline: ...`, a line per show that keeps any, the covers,
    /// and the downloads in progress. Nothing when nothing is kept.
    static func keepingText(_ report: Keeper.Report) -> String {
        let shows = report.shows.filter { $0.kept > 0 || $0.keepLatest > 0 || !$0.pinned.isEmpty || !$0.unfit.isEmpty }
        let covers = report.covers ?? 0
        guard !shows.isEmpty || report.keepLatest > 0 || covers > 0 else { return "" }
        var out = ""
        if !shows.isEmpty || report.keepLatest > 0 {
            // A mount that keeps none by default, with shows that set their
            // own N: "newest 0 per show" read as if nothing were kept.
            out += report.keepLatest > 0 ? "Kept offline: newest \(report.keepLatest) per show" : "Kept offline, as each show sets it"
            out += ", \(CacheMaintenance.bytes(report.keptBytes)) when complete"
            if let cap = report.capBytes { out += " (cap \(CacheMaintenance.bytes(cap)))" }
            out += "\n"
        }
        if covers > 0 {
            out += "Covers kept offline: \(report.coversComplete ?? 0) of \(covers) complete\n"
        }
        for show in shows {
            out += "  \(TerminalText.clean(show.title)): newest \(show.keepLatest), \(show.complete) of \(show.kept) complete"
            if !show.pinned.isEmpty {
                out += "; pinned: " + show.pinned.map { TerminalText.clean($0) }.joined(separator: ", ")
            }
            if !show.unfit.isEmpty {
                out += "; not kept, over the cap: " + show.unfit.map { TerminalText.clean($0) }.joined(separator: ", ")
            }
            out += "\n"
        }
        for download in report.downloading {
            out += "  downloading \(TerminalText.clean(download.show)) / \(TerminalText.clean(download.episode)): "
            out += "\(CacheMaintenance.bytes(download.bytes)) of \(CacheMaintenance.bytes(download.size))"
            if download.waitsForRoom == true {
                out += ", waiting for room on the cache's full disk"
            } else if download.paused {
                out += ", paused while a player reads"
            } else {
                out += ", \(CacheMaintenance.bytes(download.rate))/s"
                if let left = download.secondsLeft { out += ", \(left) s left" }
            }
            out += "\n"
        }
        return out
    }

    /// `Feeds: 997 ok, 1 pending, 2 failed`, from the last mount's records.
    private static func feedSummary(_ feeds: [Feed]) -> String {
        let states = feeds.compactMap { $0.lastRefresh?.state }
        guard !states.isEmpty else { return "" }
        let count = { (state: String) in states.filter { $0 == state }.count }
        return "Feeds: \(count("ok")) ok, \(count("pending")) pending, \(count("failed")) failed\n"
    }

    /// A refresh record with the feed's URL, should an older podfs have
    /// written it into the detail, shown without its secrets.
    private static func refresh(_ record: FeedStatusStore.Record, url: String) -> Refresh {
        let detail = record.detail.replacingOccurrences(of: url, with: FeedURL.redacted(url, for: .log))
        return Refresh(checkedAt: record.checkedAt, ok: record.ok, detail: detail, pending: record.pending == true)
    }

    private static func feed(_ snapshot: FeedSnapshot, logger: Logger) -> Feed {
        var title = FeedURL.redacted(snapshot.url)
        var named: [String: (name: String, feedLength: Int64?, kind: ShowLayout.Kind)] = [:]
        var order: [String] = []
        if let body = snapshot.body, let parsed = try? FeedParser.parse(body, baseURL: snapshot.url) {
            title = parsed.title ?? title
            let layout = ShowLayout(
                feedURL: snapshot.url, feed: parsed, directoryName: Naming.sanitize(parsed.title), logger: logger)
            for item in layout.files {
                named[item.key] = (item.name, item.kind == .episode ? item.episode?.enclosureLength : nil, item.kind)
                order.append(item.key)
                // A show whose guid another subscription holds is cached
                // under its URL's keys (`Catalog`): its files are found
                // under either.
                if let former = item.formerKey {
                    named[former] = named[item.key]
                    order.append(former)
                }
            }
        }
        let records = Dictionary(snapshot.episodes.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var episodes: [Episode] = []
        for key in order {
            guard let record = records[key] else { continue }
            episodes.append(
                episode(record, name: named[key]?.name, feedLength: named[key]?.feedLength, kind: named[key]?.kind))
        }
        for record in snapshot.episodes where named[record.key] == nil {
            episodes.append(episode(record, name: nil, feedLength: nil, kind: nil))
        }
        return Feed(
            url: FeedURL.redacted(snapshot.url), fullURL: snapshot.url, title: title, fetchedAt: snapshot.fetchedAt,
            lastRefresh: nil, episodes: episodes)
    }

    private static func episode(
        _ record: EpisodeRecord, name: String?, feedLength: Int64?, kind: ShowLayout.Kind?
    ) -> Episode {
        let cached = record.ranges.reduce(Int64(0)) { $0 + ($1.upperBound - $1.lowerBound) }
        let complete = record.length.map { $0 > 0 && cached == $0 } ?? false
        let final = record.variant.isFinal && complete
        return Episode(
            name: name, url: FeedURL.redacted(record.url), key: record.key, size: record.length ?? feedLength ?? 0,
            sizeConfirmed: record.length != nil, kind: kind?.rawValue, cachedBytes: cached, lastRead: record.lastRead,
            ranges: record.ranges.map { [$0.lowerBound, $0.upperBound] }, unstable: record.variant.unstable,
            pinned: record.variant.pinnedURL.map { $0 != record.url } ?? false,
            streaming: record.variant.unstable != nil && !complete, final: final)
    }

    /// What the text report says of an episode's variant, e.g. "final,
    /// pinned" or "stitched per request, streamed whole".
    static func marks(_ episode: Episode) -> String {
        var marks: [String] = []
        if episode.unstable != nil { marks.append("stitched per request") }
        if episode.streaming { marks.append("streamed whole") }
        if episode.final { marks.append("final") }
        if episode.pinned { marks.append("pinned") }
        return marks.joined(separator: ", ")
    }

    /// Ten cells, one per tenth of the episode.
    private static func map(_ episode: Episode) -> String {
        guard episode.size > 0 else { return String(repeating: "░", count: 10) }
        var cells = ""
        for cell in 0..<10 {
            let lower = episode.size * Int64(cell) / 10
            let upper = episode.size * Int64(cell + 1) / 10
            let covered = episode.ranges.reduce(Int64(0)) { total, range in
                total + max(0, min(upper, range[1]) - max(lower, range[0]))
            }
            cells += covered >= upper - lower ? "█" : covered > 0 ? "▒" : "░"
        }
        return cells
    }

    private static func percent(_ part: Int64, of whole: Int64, bare: Bool = false) -> String {
        guard whole > 0 else { return bare ? "-" : "" }
        // A cap file edited by hand may make the share any number.
        let value = Int(min(max(Double(part) / Double(whole) * 100, 0), 1e6).rounded(.down))
        return bare ? "\(value)%" : " (\(value)%)"
    }

    private static func date(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private static func leftPad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
