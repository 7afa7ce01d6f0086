import FUSEBridge
import Feeds
import Foundation
import HTTPClient
import Locking
import Logging
import PodFS
import RangeCache

/// The composition root: wires the cache, the HTTP client, the catalogue,
/// the reader and the FUSE session, serves, and tears down in order.
struct MountService {
    /// How a background child tells its parent it is ready.
    enum Readiness {
        case none
        case pipe
    }

    let sources: [String]
    let mountpoint: String
    let cacheDirectory: String
    let fuseOptions: [String]
    let feedLimit: Int
    /// `--allow-private`: no address-zone rule.
    let allowPrivate: Bool
    let commitInterval: Double
    let revalidateAfter: Double
    /// Seconds between background refreshes of the feeds; `nil`: never.
    let refreshInterval: Double?
    /// As given; `nil`: the default (half the space available to the cache).
    let cacheSize: CacheSize?
    let logLevel: Logger.Level
    let readiness: Readiness
    /// Log to syslog (journald) instead of standard error.
    var logToSyslog = false
    /// The kernel's read-ahead for the mount, in KiB (root only).
    var readAheadKiB = 128
    /// `-o proxy=URL`: every request goes through it; `nil`: no proxy,
    /// whatever the environment says.
    var proxy: HTTPProxy?
    /// Seconds a mount waits for feeds it has no kept copy of before it is
    /// ready; those that come later appear when they come.
    var readyDeadline = 2.5
    /// The same for a mount that has shows to list at once: feeds it has
    /// no kept copy of (a new subscription, a feed that failed before) are
    /// waited for only this long, and one that never answered in the last
    /// mount not at all.
    var warmReadyDeadline = 0.3
    /// How many feed fetches run at once, in all and per host.
    var feedLimits = FeedSchedule.Limits.standard
    /// The User-Agent of every request (`-o user_agent=`).
    var userAgent = PodfsVersion.userAgent
    /// The newest N episodes of each show kept complete (`-o keep_latest`).
    var keepLatest = 0
    /// `-o sync=`: the server the subscriptions sync with.
    var sync: Sync?

    /// Where and as whom the subscriptions sync.
    struct Sync {
        var url: String
        /// Absolute; `nil`: `~/.netrc`.
        var passwordFile: String?
        var device: String
    }

    /// Mounts and serves until unmounted; returns the exit status.
    func run() -> Int32 {
        if readiness == .pipe {
            setsid()
            // A daemon keeps no directory busy (the one it was started from
            // may be on a file system someone wants to unmount). Every path
            // it uses was made absolute by `Mount.run`.
            chdir("/")
        }
        // Start from a clean signal state whatever the parent left us (a
        // blocked SIGTERM would make unmount-by-signal hang); threads
        // created from here inherit it.
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
        Heap.limitArenas(cores: ProcessInfo.processInfo.activeProcessorCount)
        signal(SIGPIPE, SIG_IGN)
        // Past a file size limit (ulimit -f) a write should fail with EFBIG,
        // which the reader survives, not kill the daemon.
        signal(SIGXFSZ, SIG_IGN)
        LoggingSystem.bootstrap { [logToSyslog] label in
            if logToSyslog { return SyslogLogHandler(label: label, level: logLevel) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            return handler
        }
        let logger = Logger(label: "podfs")
        do {
            return try serve(logger: logger)
        } catch {
            logger.error("\(error)")
            report("error: \(error)")
            return 1
        }
    }

    /// Shows the kept copies of `urls` that parse, in SOURCE order: parsed
    /// on a few threads a batch at a time, each batch added to the
    /// catalogue and let go, so the mount never holds every feed parsed at
    /// once. Returns the URLs shown.
    static func showKeptCopies(
        of urls: [String], loader: FeedLoader, catalog: Catalog, adopt: ([Catalog.Show]) -> Void,
        shouldStop: () -> Bool = { false }
    ) throws -> Set<String> {
        let batchSize = 64
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        var shown = Set<String>()
        for start in stride(from: 0, to: urls.count, by: batchSize) where !shouldStop() {
            let batch = Array(urls[start..<min(start + batchSize, urls.count)])
            let parsed = Locked<[Int: ParsedFeed]>([:])
            DispatchQueue.concurrentPerform(iterations: min(workers, batch.count)) { worker in
                for position in stride(from: worker, to: batch.count, by: min(workers, batch.count)) {
                    if let feed = loader.kept(url: batch[position]) { parsed.withLock { $0[position] = feed } }
                }
            }
            let byPosition = parsed.withLock { $0 }
            let feeds = batch.indices.compactMap { position in
                byPosition[position].map { (url: batch[position], feed: $0) }
            }
            adopt(try catalog.add(feeds))
            shown.formUnion(feeds.map(\.url))
        }
        return shown
    }

    /// The variables libcurl would take a proxy from (`HTTP_PROXY` in
    /// capitals it never reads).
    private static let proxyVariables = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]

    /// The address-zone rule: `--allow-private` lifts it.
    ///
    /// `PODFS_TEST_TREAT_AS_PUBLIC` (comma-separated addresses) is for the
    /// integration tests only: a network namespace with nothing but loopback
    /// has no public address, so the tests put a private one on `lo` and
    /// name it here to play "the internet". It only changes how those exact
    /// addresses are classified, and anyone who can set the daemon's
    /// environment could do more harm anyway; it is logged loudly.
    func addressPolicy(logger: Logger) -> AddressPolicy {
        var policy = AddressPolicy(allowPrivate: allowPrivate)
        if let list = ProcessInfo.processInfo.environment["PODFS_TEST_TREAT_AS_PUBLIC"], !list.isEmpty {
            policy.treatedAsPublic = Set(list.split(separator: ",").compactMap { IPAddress(numeric: String($0)) })
            logger.warning(
                "PODFS_TEST_TREAT_AS_PUBLIC is set (for tests only): these addresses count as public",
                metadata: ["addresses": "\(policy.treatedAsPublic.map(\.description).sorted())"])
        }
        if allowPrivate {
            logger.notice("allow_private: feeds may send podfs to loopback and private addresses")
        }
        if let proxy {
            logger.notice(
                """
                proxy: every request goes through \(proxy.shown), so the address-zone rule sees only the proxy's \
                address (\(proxy.whatTheZoneRuleSees(under: policy))), not the origins': it no longer tells where \
                a feed's URLs lead, the proxy decides what they may reach
                """,
                metadata: ["proxy.url": "\(proxy.shown)", "proxy.host": "\(proxy.host)"])
        } else {
            let environment = ProcessInfo.processInfo.environment
            let ignored = Self.proxyVariables.filter { !(environment[$0] ?? "").isEmpty }
            if !ignored.isEmpty {
                logger.info(
                    """
                    ignoring \(ignored.joined(separator: ", ")) in the environment: a proxy would void the \
                    address-zone rule; to use one, mount with -o proxy=URL
                    """)
            }
        }
        return policy
    }

    /// The cap in bytes: as given, or half of what the cache's file system
    /// offers it (free space plus what the cache already holds).
    func cacheLimit(index: CacheIndex, logger: Logger) throws -> Int64? {
        if let cacheSize { return cacheSize.bytes }
        guard let free = VolumeSpace(of: cacheDirectory)?.free else { return nil }
        let held = (try? index.cachedBytes()) ?? 0
        let limit = (free + held) / 2
        logger.info("cache size cap", metadata: ["cap.bytes": "\(limit)", "rule": "half of free space plus cached"])
        return limit
    }

    /// Tells `line` to whoever started the mount: the parent's pipe
    /// (`ready`, `warning: ...`, `note: ...`, `error: ...`), or standard
    /// error in the foreground. Returns `false` when a parent waiting on the pipe is
    /// gone (stopped by Ctrl-C, killed): nobody was told.
    @discardableResult
    func report(_ line: String) -> Bool {
        guard readiness == .pipe else {
            if let shown = Daemon.shown(line) {
                Console.error(shown)
            } else if line.hasPrefix("error") {
                Console.error("podfs: \(line)\n")
            }
            return true
        }
        // One line a report: its own line breaks travel as U+001E, which
        // the parent turns back (`Daemon.start`).
        return Console.out(line.replacingOccurrences(of: "\n", with: Daemon.lineBreak) + "\n")
    }
}
