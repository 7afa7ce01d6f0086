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
    var readAheadKiB = 768
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
        let client = HTTPClient(logger: logger, userAgent: userAgent, policy: policy, proxy: proxy)
        let source = CurlSource(
            client: client, feedLimit: feedLimit,
            zones: FeedZones(policy: policy, pinnedIssuer: { index.pinnedIssuer(url: $0) }))
        let feedURLs: [String]
        do {
            feedURLs = try FeedSources.urls(sources)
        } catch {
            throw MountError(error.message)
        }
        let loader = FeedLoader(
            source: source, index: index, moves: FeedMoves(directory: cacheDirectory), logger: logger)
        let feedStatus = FeedStatusStore(directory: cacheDirectory)
        // Kept copies serve at once (docs/DESIGN.md, "Feeds"): the mount
        // shows them now and revalidates them in the background.
        let catalog = try Catalog(feeds: [], index: index, logger: logger)
        var tuning = EpisodeReader.Tuning()
        tuning.revalidateAfter = revalidateAfter
        tuning.commitEveryChunk = commitInterval == 0
        tuning.cacheLimit = try cacheLimit(index: index, logger: logger)
        // For `podfs status`, which cannot ask the daemon.
        _ = CachePrivacy.writeFile(
            cacheDirectory + "/cache-size", Array((tuning.cacheLimit.map { String($0) } ?? "none").utf8))
        let reader = EpisodeReader(index: index, source: source, logger: logger, tuning: tuning)
        let zones = source.zones
        let adopt: @Sendable ([Catalog.Show]) -> Void = { shows in
            for show in shows {
                zones.adopt(urls: (show.episodes + show.extras).map(\.url), feedURL: show.feedURL)
                reader.adopt(show.episodes + show.extras)
            }
        }
        // The shows the last mount had: listed at once, built from their
        // kept copies in the background or when first looked into.
        let saved = ShowList.read(directory: cacheDirectory)
        let wanted = Set(feedURLs)
        // Only shows whose kept copy is still in the index (a damaged index
        // is rebuilt empty).
        let kept = (try? index.keptFeedURLs()) ?? []
        let listable = saved.filter { wanted.contains($0.url) && kept.contains($0.url) }
        let lazy = !listable.isEmpty
        let keptURLs: Set<String>
        // Tells the kernel a listed show is gone (its kept copy gave none).
        let kernel = Locked<(any KernelCacheInvalidator)?>(nil)
        let forget: @Sendable (Catalog.Placeholder?) -> Void = { placeholder in
            guard let placeholder, let invalidator = kernel.withLock({ $0 }) else { return }
            invalidator.invalidate(inode: Catalog.rootInode)
            invalidator.invalidate(parent: Catalog.rootInode, name: placeholder.name)
        }
        if lazy {
            catalog.list(listable) { url in
                // Called from a request handler: the kernel is told from
                // another thread (docs/DESIGN.md, "Feeds").
                guard let feed = loader.kept(url: url) else {
                    let dropped = catalog.dropPlaceholder(url: url)
                    DispatchQueue.global().async { forget(dropped) }
                    return
                }
                do {
                    adopt(try catalog.add([(url: url, feed: feed)]))
                } catch {
                    logger.error("could not show the kept copy", metadata: ["feed.url": .url(url), "error": "\(error)"])
                    let dropped = catalog.dropPlaceholder(url: url)
                    DispatchQueue.global().async { forget(dropped) }
                }
            }
            keptURLs = Set(catalog.placeholderURLs)
            logger.info("shows listed from the last mount", metadata: ["feeds": "\(catalog.placeholderURLs.count)"])
        } else {
            keptURLs = try Self.showKeptCopies(of: feedURLs, loader: loader, catalog: catalog, adopt: adopt)
            logger.info("kept copies shown", metadata: ["feeds": "\(keptURLs.count)", "episodes": "\(catalog.episodeCount)"])
            Heap.giveBackFreedMemory()
            reader.evictIfOverLimit()
        }
        let fileSystem = PodFileSystem(
            catalog: catalog, reader: reader, logger: logger,
            control: StatusFiles.make(cacheDirectory: cacheDirectory, mountpoint: mountpoint, logger: logger))
        // Feeds that never answered in the last mount (still pending when it
        // ended: a host that hangs) hold no mount that has shows to list.
        let records = feedStatus.records
        // The episodes read last are the likeliest to be reopened: check
        // them with the origin as soon as one feed answered (offline, the
        // checks would only fail), and once more, for those the reader did
        // not know then, when a remount's shows are built from their kept
        // copies (an episode checked or being checked is not asked again).
        let answered = Locked(false)
        let silentBefore = wanted.subtracting(keptURLs).filter { records[$0]?.pending == true }
        let refresher = FeedRefresher(
            urls: feedURLs, interval: refreshInterval, limits: feedLimits, loader: loader, catalog: catalog,
            reader: reader, statusStore: feedStatus, logger: logger,
            onNewFiles: { urls, feedURL in zones.adopt(urls: urls, feedURL: feedURL) },
            onFirstAnswer: {
                answered.withLock { $0 = true }
                reader.revalidateRecentlyRead()
            })
        // The background pass over the placeholders, then the first round.
        let building = lazy
            ? KeptCopyPass(
                urls: catalog.placeholderURLs, loader: loader, catalog: catalog, adopt: adopt, logger: logger,
                dropped: forget, then: { [cacheDirectory] in
                    ShowList.write(catalog.placeholdersToSave, directory: cacheDirectory, logger: logger)
                    Heap.giveBackFreedMemory()
                    reader.evictIfOverLimit()
                    if answered.withLock({ $0 }) { reader.revalidateRecentlyRead() }
                })
            : nil
        // What the mount waits for before it is ready: a cold mount, every
        // feed; one with shows to list, the feeds it has nothing of, except
        // those that never answered last time. With nothing to wait for, the
        // background work starts after the mount is ready, so it takes no
        // CPU from getting there.
        let waitFor = keptURLs.isEmpty ? wanted : wanted.subtracting(keptURLs).subtracting(silentBefore)
        let startEarly = !waitFor.isEmpty
        if startEarly {
            building?.start()
            refresher.start()
        } else {
            feedStatus.markPending(urls: feedURLs)
        }
        // A cold mount is ready when its feeds are in, or after a short
        // deadline; a mount with shows to list waits far less for the feeds
        // it has nothing of. Shows that come later appear when they come.
        let waiting = refresher.waitForAnswers(
            from: waitFor, timeout: keptURLs.isEmpty ? readyDeadline : warmReadyDeadline)
            .union(wanted.subtracting(keptURLs).subtracting(waitFor))
        // A feed still waiting but answered once is waiting for its retry
        // (a Retry-After): with nothing to show, that is a failure to say.
        let unanswered = waiting.filter { feedStatus.record(url: $0)?.pending == true }
        let listed = catalog.feedURLs.union(catalog.placeholderURLs)
        let failures = feedURLs.filter { !listed.contains($0) && !unanswered.contains($0) }.map { url in
            "\(FeedURL.redacted(url, for: .log)): \(feedStatus.record(url: url)?.detail ?? "unknown")"
        }
        if listed.isEmpty && unanswered.isEmpty {
            refresher.requestStop()
            client.shutdown()
            refresher.waitUntilStopped()
            throw MountError(
                "no feed could be loaded and none is cached:\n  " + failures.joined(separator: "\n  ")
                    + "\nCheck the URL and the network, then mount again.")
        }
        let session: FUSESession
        do {
            session = try FUSESession(
                mountpoint: mountpoint, fileSystemName: "podfs", options: fuseOptions,
                fileSystem: fileSystem, logger: logger)
        } catch {
            refresher.requestStop()
            client.shutdown()
            refresher.waitUntilStopped()
            throw error
        }
        // From here on a feed that lands tells the kernel what changed.
        refresher.attach(invalidator: session)
        kernel.withLock { $0 = session }
        reader.attach(invalidator: session)
        let readAhead = session.setReadAhead(kib: readAheadKiB)
        if readAhead < readAheadKiB {
            logger.notice(
                "readahead_kb=\(readAheadKiB) lowered to \(readAhead): larger reads could not be answered from the cache by splicing (fs.pipe-max-size) and were measured slower")
        }
        reader.startFlushing(interval: commitInterval)
        reader.warmUp()
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)", "cache": "\(cacheDirectory)"])
        for failure in failures { report("warning: left out \(failure)") }
        if !waiting.isEmpty {
            report("warning: \(waiting.count) feed(s) still loading; their shows appear when they come (podfs status)")
        }
        report("ready")
        if !startEarly {
            building?.start()
            refresher.start()
        }
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
        building?.stop()
        refresher.requestStop()
        client.shutdown()
        building?.waitUntilStopped()
        refresher.requestStop()
        refresher.waitUntilStopped()
        ShowList.write(catalog.placeholdersToSave, directory: cacheDirectory, logger: logger)
        reader.stopFlushing()
        index.checkpoint()
        session.close()
        reader.detachInvalidator()
        logger.info("stopped", metadata: ["exit.status": "\(status == 0 ? 0 : 1)"])
        return status == 0 ? 0 : 1
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
        guard let free = VolumeSpace(of: cacheDirectory)?.free else { return nil }
        let held = (try? index.cachedBytes()) ?? 0
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
