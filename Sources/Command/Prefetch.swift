import ArgumentParser
import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache

/// `podfs prefetch SOURCE... [--latest N] [--since DATE]`: fills the cache
/// for offline listening by reading episodes through a mount (the one that
/// uses the cache, else a private one), with progress.
struct Prefetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fill the cache with episodes for offline listening, with progress.",
        discussion: """
            Reads the chosen episodes through a mount, so only the bytes not yet cached are \
            fetched: a run stopped with Ctrl-C resumes where it stopped. If a podfs mount uses \
            the same cache directory, prefetch reads through that mount (its feeds must include \
            the SOURCEs); otherwise it mounts the feeds on a private temporary directory and \
            unmounts it when done. On a terminal each episode gets a progress bar and the total \
            shows bytes, rate and time left; otherwise one line per episode.
            """)

    @Option(name: .long, help: "The cache directory (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    // Unconditional: `--latest -1` gets the range's message, not
    // "Missing value" for a `-1` taken as an option.
    @Option(name: .long, parsing: .unconditional, help: "Only the N newest episodes of each feed.")
    var latest: Int?

    @Option(name: .long, help: "Only episodes published on or after DATE (YYYY-MM-DD, UTC, or ISO 8601).")
    var since: String?

    @Option(
        name: .short,
        help: ArgumentHelp(
            "Mount options for the private mount (as for podfs mount), e.g. -o allow_private,max_feed_size=200M."))
    var o: [String] = []

    @Argument(help: "Feed URLs, OPML files or URL list files.")
    var sources: [String] = []

    mutating func validate() throws {
        guard !sources.isEmpty else {
            throw ValidationError("give at least one SOURCE, e.g. podfs prefetch --latest 3 https://example.org/feed.xml")
        }
        if let latest, latest < 1 { throw ValidationError("--latest needs a number of episodes, 1 or more") }
        if let since, Self.date(since) == nil {
            throw ValidationError("--since needs a date such as 2026-11-01 (or 2026-11-01T18:00:00Z), not '\(since)'")
        }
        _ = try MountOptions(o)
    }

    func run() throws {
        let options = try MountOptions(o)
        let cacheDirectory = try CacheDirectoryChoice.resolve(cacheDir ?? options.cacheDirectory ?? defaultCacheDirectory())
        let feedURLs: [String]
        do {
            // In the form the list, the index and the status file keep.
            feedURLs = try FeedSources.urls(sources).map { SourceList.feedURL($0) ?? $0 }
        } catch {
            Self.fail(error.message)
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let mount: PrefetchMount
        do {
            mount = try PrefetchMount(
                cacheDirectory: cacheDirectory, sources: FeedSources.absolute(sources),
                options: o, executable: executable)
        } catch {
            Self.fail("\(error)")
        }
        if mount.ownDaemon == nil {
            Console.error(
                "podfs: the cache \(cacheDirectory) is mounted on \(mount.mountpoint); prefetching through that mount\n")
        }
        let stopper = Stopper()
        var status: Int32 = 0
        do {
            let (episodes, failures) = try select(
                in: mount, feedURLs: feedURLs, cacheDirectory: cacheDirectory, stopper: stopper)
            if stopper.isStopped {
                // Stopped while a feed was loading: nothing was read yet,
                // and a feed it stopped waiting for failed for no reason.
                Console.error("podfs: prefetch stopped while the feeds were loading; nothing was fetched\n")
                mount.stop()
                throw ExitCode(130)
            }
            for failure in failures { Console.error("podfs: \(failure)\n") }
            // On Ctrl-C a private mount is stopped at once (a read in flight
            // ends with an error); a borrowed one is left alone, and the read
            // in flight ends with this process.
            let outcome = PrefetchRun(episodes: episodes, stopper: stopper) { mount.stop() }.run()
            status = outcome != 0 ? outcome : (failures.isEmpty ? 0 : 1)
            if mount.ownDaemon == nil, outcome == 0 {
                waitForCommit(episodes, cacheDirectory: cacheDirectory)
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            Console.error("podfs: \(error)\n")
            status = 1
        }
        mount.stop()
        throw ExitCode(status)
    }

    // MARK: - Private methods

    /// A borrowed mount commits what it fetched to the index within its
    /// commit interval: wait (up to 15 s) so that `podfs status` right
    /// after a prefetch shows it.
    private func waitForCommit(_ episodes: [PrefetchEpisode], cacheDirectory: String) {
        var quiet = Logger(label: "podfs")
        quiet.logLevel = .critical
        let wanted = Dictionary(episodes.map { ($0.url, $0.size) }, uniquingKeysWith: { first, _ in first })
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let records = ((try? CacheIndex(readingDirectory: cacheDirectory, logger: quiet).snapshot()) ?? [])
                .flatMap(\.episodes)
            let committed = records.filter { record in
                guard let size = wanted[record.url] else { return false }
                // The origin's length once known (the listing may show the feed's claim).
                return record.ranges.reduce(Int64(0)) { $0 + $1.upperBound - $1.lowerBound } >= (record.length ?? size)
            }
            if Set(committed.map(\.url)).count >= wanted.count { return }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// How long the feeds the mount is still loading are waited for, all
    /// together.
    private static let feedWait = 60.0

    /// The episodes to read: per feed, the files in the mount whose
    /// enclosure URL the feed lists, newest first, filtered; and what
    /// kept a feed out (its error, or its absence from a borrowed mount).
    /// A feed the mount is still loading (a slow host) is waited for.
    private func select(
        in mount: PrefetchMount, feedURLs: [String], cacheDirectory: String, stopper: Stopper
    ) throws -> (episodes: [PrefetchEpisode], failures: [String]) {
        var quiet = Logger(label: "podfs")
        quiet.logLevel = .error
        let cutoff = since.flatMap(Self.date)
        var chosen: [PrefetchEpisode] = []
        var failures: [String] = []
        // The mount's files first: listing a show not built yet builds it,
        // which registers its episodes in the index.
        var files = Self.episodeFiles(in: mount.mountpoint)
        var snapshot = try CacheIndex(readingDirectory: cacheDirectory, logger: quiet).snapshot()
        let deadline = Date().addingTimeInterval(Self.feedWait)
        for url in feedURLs where !stopper.isStopped {
            let shown = FeedURL.redacted(url)
            // The mount shows each URL without its secrets (`user.podfs.url`).
            func listed() -> [PrefetchEpisode] {
                let urls = Set(snapshot.first { $0.url == url }?.episodes.map { FeedURL.redacted($0.url) } ?? [])
                return files.filter { urls.contains($0.url) }
            }
            var found = listed()
            var failure: String?
            while found.isEmpty, failure == nil, !stopper.isStopped {
                let record = FeedStatusStore.read(directory: cacheDirectory)[url]
                // A borrowed mount that never loaded it does not serve it.
                if record == nil, mount.ownDaemon == nil { break }
                let settled = record.map { $0.pending != true } ?? false
                if settled, record?.ok == false {
                    failure = "nothing of \(shown) was prefetched: \(TerminalText.clean(record?.detail ?? ""))"
                    break
                }
                if !settled {
                    guard Date() < deadline else {
                        failure = "the feed \(shown) was still loading after \(Int(Self.feedWait)) s; nothing of it was prefetched"
                        break
                    }
                    Thread.sleep(forTimeInterval: 0.25)
                }
                // Listed again: a feed that loaded since the last listing
                // (or just now) shows its files.
                files = Self.episodeFiles(in: mount.mountpoint)
                snapshot = try CacheIndex(readingDirectory: cacheDirectory, logger: quiet).snapshot()
                found = listed()
                if settled { break }
            }
            guard !found.isEmpty else {
                failures.append(
                    failure ?? (mount.ownDaemon == nil
                        ? "the feed \(shown) is not in the mount on \(mount.mountpoint) that uses this cache; add it "
                            + "to that mount (podfs subscribe with its URL), or unmount it (podfs unmount "
                            + "\(mount.mountpoint)) and run prefetch again"
                        : "the feed \(shown) lists no episode file; nothing of it was prefetched"))
                continue
            }
            found.sort { $0.published > $1.published }
            if let cutoff { found = found.filter { $0.published >= cutoff } }
            if let latest { found = Array(found.prefix(latest)) }
            chosen += found
        }
        return (chosen, failures)
    }

    /// Every episode file of the mount (two levels: show, episode) with its
    /// enclosure URL (`user.podfs.url`).
    private static func episodeFiles(in mountpoint: String) -> [PrefetchEpisode] {
        var files: [PrefetchEpisode] = []
        let manager = FileManager.default
        for show in ((try? manager.contentsOfDirectory(atPath: mountpoint)) ?? []).sorted() where !show.hasPrefix(".") {
            let directory = mountpoint + "/" + show
            let names = ((try? manager.contentsOfDirectory(atPath: directory)) ?? []).sorted()
            // The show's episodes are what its playlist lists: not its
            // cover, transcripts or chapters, which would take places of
            // `--latest`.
            let episodes = names.first { $0.hasSuffix(".m3u") }.flatMap {
                manager.contents(atPath: directory + "/" + $0).map { PrefetchEpisode.playlistEntries(Array($0)) }
            }
            for name in names where episodes?.contains(name) ?? true {
                let path = directory + "/" + name
                var info = stat()
                guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                    let url = attribute(path, "user.podfs.url")
                else { continue }
                files.append(PrefetchEpisode(
                    path: path, label: show + "/" + name, url: url, size: Int64(info.st_size),
                    published: Int64(info.st_mtim.tv_sec)))
            }
        }
        return files
    }

    /// Seconds since the epoch for a `YYYY-MM-DD` date (UTC midnight) or an ISO 8601 timestamp.
    private static func date(_ text: String) -> Int64? {
        if let full = ISO8601DateFormatter().date(from: text) { return Int64(full.timeIntervalSince1970) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) }
    }

    private static func fail(_ message: String) -> Never {
        Console.error("podfs: \(message)\n")
        Foundation.exit(1)
    }
}
