import FUSEBridge
import Feeds
import Foundation
import HTTPClient
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
    var readAheadKiB = 768
    /// `-o proxy=URL`: every request goes through it; `nil`: no proxy,
    /// whatever the environment says.
    var proxy: HTTPProxy?

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

    private func serve(logger: Logger) throws -> Int32 {
        let lock = try CacheLock(directory: cacheDirectory, owner: .mount(mountpoint))
        defer { lock.release() }
        let index = try CacheIndex(directory: cacheDirectory, logger: logger)
        let policy = addressPolicy(logger: logger)
        let client = HTTPClient(logger: logger, policy: policy, proxy: proxy)
        let zones = FeedZones(policy: policy, pinnedIssuer: { index.pinnedIssuer(url: $0) })
        let source = CurlSource(client: client, feedLimit: feedLimit, zones: zones)
        let feedURLs: [String]
        do {
            feedURLs = try FeedSources.urls(sources)
        } catch {
            throw MountError(error.message)
        }
        let loader = FeedLoader(source: source, index: index, logger: logger)
        let feedStatus = FeedStatusStore(directory: cacheDirectory)
        var feeds: [(url: String, feed: ParsedFeed)] = []
        var failures: [String] = []
        var anyFresh = false
        for url in feedURLs {
            switch loader.load(url: url) {
            case .fresh(let feed):
                anyFresh = true
                feeds.append((url: url, feed: feed))
                feedStatus.record(url: url, ok: true, detail: "loaded")
            case .cached(let feed, let reason):
                feeds.append((url: url, feed: feed))
                feedStatus.record(url: url, ok: false, detail: reason + " (showing the last good copy)")
            case .failed(let reason):
                logger.error("feed left out", metadata: ["feed.url": .url(url), "reason": "\(reason)"])
                failures.append("\(FeedURL.redacted(url, for: .log)): \(reason)")
                feedStatus.record(url: url, ok: false, detail: reason)
            }
        }
        if feeds.isEmpty {
            client.shutdown()
            throw MountError(
                "no feed could be loaded and none is cached:\n  " + failures.joined(separator: "\n  ")
                    + "\nCheck the URL and the network, then mount again.")
        }
        let catalog = try Catalog(feeds: feeds, index: index, logger: logger)
        for show in catalog.shows {
            source.zones.adopt(urls: (show.episodes + show.extras).map(\.url), feedURL: show.feedURL)
        }
        // The catalogue has what it needs; the parsed feeds (tens of MB for
        // a large one) would otherwise live as long as the mount.
        feeds.removeAll()
        // Parsing left tens of MB of freed heap behind; give it back.
        Heap.giveBackFreedMemory()
        var tuning = EpisodeReader.Tuning()
        tuning.revalidateAfter = revalidateAfter
        tuning.commitEveryChunk = commitInterval == 0
        tuning.cacheLimit = try cacheLimit(index: index, logger: logger)
        // For `podfs status`, which cannot ask the daemon.
        _ = CachePrivacy.writeFile(
            cacheDirectory + "/cache-size", Array((tuning.cacheLimit.map { String($0) } ?? "none").utf8))
        let reader = EpisodeReader(index: index, source: source, logger: logger, tuning: tuning)
        reader.adopt(catalog.shows.flatMap { $0.episodes + $0.extras })
        reader.evictIfOverLimit()
        let fileSystem = PodFileSystem(
            catalog: catalog, reader: reader, logger: logger,
            control: StatusFiles.make(cacheDirectory: cacheDirectory, mountpoint: mountpoint, logger: logger))
        let session = try FUSESession(
            mountpoint: mountpoint, fileSystemName: "podfs", options: fuseOptions,
            fileSystem: fileSystem, logger: logger)
        reader.attach(invalidator: session)
        let readAhead = session.setReadAhead(kib: readAheadKiB)
        if readAhead < readAheadKiB {
            logger.notice(
                "readahead_kb=\(readAheadKiB) lowered to \(readAhead): larger reads could not be answered from the cache by splicing (fs.pipe-max-size) and were measured slower")
        }
        reader.startFlushing(interval: commitInterval)
        reader.warmUp()
        // The episodes read last are the likeliest to be reopened: check
        // them with the origin now, not at their first open. Not when no
        // feed could be fetched: offline, the checks would only fail.
        if anyFresh { reader.revalidateRecentlyRead() }
        let refresher = refreshInterval.map { interval in
            FeedRefresher(
                urls: feedURLs, interval: interval, loader: loader, catalog: catalog, reader: reader,
                statusStore: feedStatus, logger: logger,
                onNewFiles: { urls, feedURL in zones.adopt(urls: urls, feedURL: feedURL) })
        }
        refresher?.attach(invalidator: session)
        refresher?.start()
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)", "cache": "\(cacheDirectory)"])
        for failure in failures { report("warning: left out \(failure)") }
        report("ready")
        if readiness == .pipe {
            // Nothing more for the parent: detach stdout from its pipe.
            let devNull = open("/dev/null", O_WRONLY)
            dup2(devNull, STDOUT_FILENO)
            close(devNull)
        }
        // The loop returns the number of the signal that stopped it:
        // SIGINT, SIGTERM and SIGHUP are how a daemon is asked to stop.
        // SIGTERM (systemd, kill) detaches and serves open files for up to
        // 10 s so their readers get their data.
        let loopStatus = session.serve(termGrace: 10)
        let status = [SIGINT, SIGTERM, SIGHUP].contains(loopStatus) ? 0 : loopStatus
        logger.info("unmounting: saving the cache index")
        // Stop refreshing first: shutting the client down cuts a refresh's
        // fetch short, and nothing invalidates after the session closes.
        refresher?.requestStop()
        client.shutdown()
        refresher?.waitUntilStopped()
        reader.stopFlushing()
        index.checkpoint()
        session.close()
        reader.detachInvalidator()
        logger.info("stopped", metadata: ["exit.status": "\(status == 0 ? 0 : 1)"])
        return status == 0 ? 0 : 1
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
    private func addressPolicy(logger: Logger) -> AddressPolicy {
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
    private func cacheLimit(index: CacheIndex, logger: Logger) throws -> Int64? {
        if let cacheSize { return cacheSize.bytes }
        var stats = statvfs()
        guard statvfs(cacheDirectory, &stats) == 0 else { return nil }
        let free = Int64(stats.f_bavail) * Int64(stats.f_frsize)
        let held = (try? index.usage().reduce(Int64(0)) { $0 + $1.bytes }) ?? 0
        let limit = (free + held) / 2
        logger.info("cache size cap", metadata: ["cap.bytes": "\(limit)", "rule": "half of free space plus cached"])
        return limit
    }

    private func report(_ line: String) {
        guard readiness == .pipe else {
            if line.hasPrefix("warning") || line.hasPrefix("error") {
                FileHandle.standardError.write(Data("podfs: \(line)\n".utf8))
            }
            return
        }
        FileHandle.standardOutput.write(Data((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }
}
