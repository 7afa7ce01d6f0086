import FUSEBridge
import Feeds
import Foundation
import HTTPClient
import Locking
import Logging
import PodFS
import RangeCache

/// A mount's life in order: the parts are made, the shows listed, the
/// feeds started, the mount waits until it is ready, the FUSE session
/// serves until unmounted, and everything stops in order.
extension MountService {
    // MARK: - Nested types

    /// What a mount is made of.
    struct Parts {
        let index: CacheIndex
        let client: HTTPClient
        let source: CurlSource
        let loader: FeedLoader
        let feedStatus: FeedStatusStore
        let catalog: Catalog
        let reader: EpisodeReader
        /// The subscribed feeds when the mount began, in order.
        let feedURLs: [String]
        /// Where the subscriptions live (`SubscriptionList`).
        let list: SubscriptionList
        /// The sync server (`-o sync=`), if any.
        let syncServer: SyncClient?
        /// Registers a show's files with the reader.
        let adopt: @Sendable ([Catalog.Show]) -> Void
        /// Whether a feed answered in this mount (the episodes read last
        /// are checked with the origin from then on).
        let answered = Locked(false)
        /// Keeps the newest episodes and the pins complete offline.
        let keeper: Keeper
        let scanAhead: ScanAhead
    }

    /// The shows listed before any feed is asked.
    struct Listed {
        /// The feeds listed from a kept copy or the last mount's list.
        let keptURLs: Set<String>
        /// Listed from the last mount's list, built when first looked into
        /// or by `building`.
        let building: KeptCopyPass?
        /// Builds the shows the feeds' rounds list on arrival.
        let arrivals: ArrivalBuilds
        /// Tells the kernel about the root once the session exists.
        let kernel: Locked<(any KernelCacheInvalidator)?>
    }

    /// The feeds on their way, and what the mount waits for.
    struct Feeds {
        let refresher: FeedRefresher
        /// The feeds the mount waits for before it is ready.
        let waitFor: Set<String>
        /// Whether the background work started before the mount was ready
        /// (it waits for feeds), or starts after.
        let startEarly: Bool
    }

    // MARK: - Methods

    func serve(logger: Logger) throws -> Int32 {
        let lock = try CacheLock(directory: cacheDirectory, owner: .mount(mountpoint))
        defer { lock.release() }
        let parts = try makeParts(logger: logger)
        rehearse(logger: logger)
        let listed = try listShows(parts, logger: logger)
        let fileSystem = PodFileSystem(
            catalog: parts.catalog, reader: parts.reader, logger: logger,
            control: StatusFiles.make(cacheDirectory: cacheDirectory, mountpoint: mountpoint, logger: logger),
            keeper: parts.keeper, scanAhead: parts.scanAhead)
        let feeds = startFeeds(parts, listed, logger: logger)
        let (waiting, failures) = try waitUntilReady(parts, listed, feeds)
        let session: FUSESession
        do {
            session = try FUSESession(
                mountpoint: mountpoint, fileSystemName: "podfs", options: fuseOptions,
                fileSystem: fileSystem, logger: logger)
        } catch {
            stopFeeds(parts, listed, feeds)
            throw error
        }
        attach(session, parts, listed, feeds, logger: logger)
        let subscriptions = startSubscriptions(parts, feeds, logger: logger)
        for failure in failures { report("warning: left out \(failure)") }
        if parts.feedURLs.isEmpty {
            // With sync, the server's list comes within seconds.
            report(
                sync == nil
                    ? "warning: no subscriptions yet; add one with: podfs subscribe --cache-dir \(cacheDirectory) URL"
                    : Daemon.note + "no subscriptions yet: the sync server's list is asked for now "
                        + "(podfs status says how it went)")
        }
        if !waiting.isEmpty {
            report("warning: \(waiting.count) feed(s) still loading; their shows appear when they come (podfs status)")
        }
        let told = report("ready")
        if !told {
            // `podfs mount` was stopped while it waited (Ctrl-C, a
            // timeout): its user was told nothing was mounted, so nothing
            // stays mounted, and nothing more starts.
            logger.warning("the podfs mount command that started this mount is gone (stopped while it waited?): unmounting")
            session.exit()
        }
        if told, !feeds.startEarly {
            listed.building?.start()
            listed.arrivals.start()
            feeds.refresher.start()
        }
        if told { parts.keeper.start() }
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
        subscriptions.server?.stop()
        subscriptions.sync?.requestStop()
        // A change under way ends with its fetches: cut them short, the
        // refresher told first, so a fetch cut short records nothing.
        feeds.refresher.requestStop()
        parts.keeper.requestStop()
        parts.reader.noteStopping()
        parts.client.shutdown()
        subscriptions.live.stop()
        subscriptions.sync?.waitUntilStopped()
        tearDown(session, parts, listed, feeds, logger: logger)
        logger.info("stopped", metadata: ["exit.status": "\(status == 0 ? 0 : 1)"])
        return status == 0 ? 0 : 1
    }

    // MARK: - Private methods

    /// Plays a cold open and first read through a reader of its own, in the
    /// background while the feeds load, so the listener's first open runs
    /// code this process has run before (`Rehearsal`). Its directory is in
    /// the cache, private to its owner, and the cache's lock makes it this
    /// mount's alone: one a killed daemon left is replaced here.
    private func rehearse(logger: Logger) {
        let directory = cacheDirectory + "/rehearsal"
        DispatchQueue.global(qos: .utility).async {
            let started = DispatchTime.now().uptimeNanoseconds
            let played = Rehearsal.run(in: directory, logger: logger)
            let took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            logger.debug(
                "rehearsed a first read", metadata: ["played": "\(played)", "ms": "\(Int(took.rounded()))"])
        }
    }

    /// The index, the HTTP client, the catalogue (empty) and the reader.
    private func makeParts(logger: Logger) throws -> Parts {
        let index = try CacheIndex(directory: cacheDirectory, logger: logger)
        let policy = addressPolicy(logger: logger)
        let client = HTTPClient(logger: logger, userAgent: userAgent, policy: policy, proxy: proxy)
        let source = CurlSource(
            client: client, feedLimit: feedLimit,
            zones: FeedZones(policy: policy, pinnedIssuer: { index.pinnedIssuer(url: $0) }))
        let (list, feedURLs): (SubscriptionList, [String])
        do {
            (list, feedURLs) = try SubscriptionList.forMount(sources: sources, cacheDirectory: cacheDirectory)
        } catch {
            throw MountError(error.description)
        }
        // A damaged OPML (cut short, an outline left open) is read as far as
        // it goes: say so, since the feeds after the damage are missing.
        let files = sources.filter { !FeedSources.isLink($0) } + [list.path]
        for file in Set(files).sorted() {
            guard let bytes = FileManager.default.contents(atPath: file),
                let damage = SourceList.damage(in: Array(bytes))
            else { continue }
            report(
                "warning: \(file) is not well-formed XML (\(damage)); its feeds after that point may be missing. "
                    + "Mend the file or export it again")
        }
        // Feeds a page linked or a sync server listed: under its zone.
        for (url, zone) in FeedIssuers.read(directory: cacheDirectory) {
            source.zones.feedListed(url: url, byServerIn: zone)
        }
        let loader = FeedLoader(
            source: source, index: index, moves: FeedMoves(directory: cacheDirectory), logger: logger)
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
        let keeper = Keeper(
            catalog: catalog, reader: reader, index: index, mountLatest: keepLatest,
            reportPath: cacheDirectory + "/" + Keeper.reportFile, logger: logger)
        // Records of feeds the list no longer names (an edit by hand while
        // unmounted) would keep counting in `podfs status`.
        let feedStatus = FeedStatusStore(directory: cacheDirectory)
        let subscribed = Set(feedURLs)
        let gone = feedStatus.records.keys.filter { !subscribed.contains($0) }
        if !gone.isEmpty { feedStatus.forget(urls: Array(gone)) }
        return Parts(
            index: index, client: client, source: source, loader: loader,
            feedStatus: feedStatus, catalog: catalog, reader: reader,
            feedURLs: feedURLs, list: list, syncServer: try makeSyncClient(client: client, logger: logger),
            adopt: { shows in
                for show in shows {
                    reader.adopt(show.episodes + show.extras)
                }
                keeper.poke()
            }, keeper: keeper, scanAhead: ScanAhead(catalog: catalog, reader: reader, logger: logger))
    }

    /// Lists the shows the last mount had at once, built from their kept
    /// copies in the background or when first looked into; with no such
    /// list, shows the kept copies now.
    private func listShows(_ parts: Parts, logger: Logger) throws -> Listed {
        let (loader, catalog) = (parts.loader, parts.catalog)
        let saved = ShowList.read(directory: cacheDirectory)
        let wanted = Set(parts.feedURLs)
        // Only shows whose kept copy is still in the index (a damaged index
        // is rebuilt empty).
        let kept = (try? parts.index.keptFeedURLs()) ?? []
        let listable = saved.filter { wanted.contains($0.url) && kept.contains($0.url) }
        // Tells the kernel a listed show is gone (its kept copy gave none).
        let kernel = Locked<(any KernelCacheInvalidator)?>(nil)
        let forget: @Sendable (Catalog.Placeholder?) -> Void = { placeholder in
            guard let placeholder, let invalidator = kernel.withLock({ $0 }) else { return }
            invalidator.invalidate(inode: Catalog.rootInode)
            invalidator.invalidate(parent: Catalog.rootInode, name: placeholder.name)
            // What it added to `Latest.m3u` from the last mount is gone.
            invalidator.invalidate(inode: Catalog.latestPlaylistInode)
        }
        // A show built from its kept copy may change `Latest.m3u` (one
        // listed on arrival added nothing to it); the kernel is told from
        // another thread, as a build may run in a request handler.
        let told = Locked(catalog.latestPlaylist)
        let adopt: @Sendable ([Catalog.Show]) -> Void = { [adopt = parts.adopt] shows in
            adopt(shows)
            let latest = catalog.latestPlaylist
            guard told.withLock({ told in defer { told = latest }; return told !== latest }) else { return }
            DispatchQueue.global().async {
                kernel.withLock { $0 }?.invalidate(inode: Catalog.latestPlaylistInode)
            }
        }
        // Builds a placeholder's show from its kept copy: one something
        // looks into (called from a request handler: the kernel is told
        // from another thread, docs/DESIGN.md, "Feeds").
        let build: @Sendable (String) -> Void = { url in
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
        // Builds the shows of placeholders still listed, a batch at a time
        // (one registration, one install each): shows listed on arrival,
        // in the background; every show at once when `Latest.m3u` is
        // opened, in its request handler.
        let buildListed: @Sendable ([String]) -> Void = { urls in
            var waiting = Set(catalog.placeholderURLs)
            let listed = urls.filter { waiting.contains($0) }
            guard listed.count > 1 else { return listed.forEach(build) }
            for start in stride(from: 0, to: listed.count, by: ArrivalBuilds.batchSize) {
                if start > 0 { waiting = Set(catalog.placeholderURLs) }
                let batch = listed[start..<min(start + ArrivalBuilds.batchSize, listed.count)].filter { waiting.contains($0) }
                guard !batch.isEmpty else { continue }
                // Parsed on the caller's thread, at its priority: the
                // rounds' threads list what arrives first.
                let feeds = batch.compactMap { url in loader.kept(url: url).map { (url: url, feed: $0) } }
                do {
                    adopt(try catalog.add(feeds))
                } catch {
                    logger.error("could not build the shows listed", metadata: ["error": "\(error)"])
                }
                // A copy that gave no show: built alone, which drops it.
                let left = Set(catalog.placeholderURLs)
                for url in batch where left.contains(url) { build(url) }
            }
        }
        // Shows listed on arrival, built a batch at a time in the background.
        let arrivals = ArrivalBuilds { urls in
            buildListed(urls)
        } whenDone: {
            Heap.giveBackFreedMemory()
        }
        guard !listable.isEmpty else {
            let keptURLs = try Self.showKeptCopies(of: parts.feedURLs, loader: loader, catalog: catalog, adopt: adopt)
            logger.info("kept copies shown", metadata: ["feeds": "\(keptURLs.count)", "episodes": "\(catalog.episodeCount)"])
            catalog.list([], builder: buildListed)
            Heap.giveBackFreedMemory()
            parts.reader.evictIfOverLimit()
            return Listed(keptURLs: keptURLs, building: nil, arrivals: arrivals, kernel: kernel)
        }
        catalog.list(listable, builder: buildListed)
        // What the kernel may have seen: the playlist with what the listed
        // shows added last time.
        told.withLock { $0 = catalog.latestPlaylist }
        logger.info("shows listed from the last mount", metadata: ["feeds": "\(catalog.placeholderURLs.count)"])
        let (reader, answered) = (parts.reader, parts.answered)
        let building = KeptCopyPass(
            urls: catalog.placeholderURLs, loader: loader, catalog: catalog, adopt: adopt, logger: logger,
            dropped: forget, then: { [cacheDirectory] in
                ShowList.write(catalog.placeholdersToSave, directory: cacheDirectory, logger: logger)
                Heap.giveBackFreedMemory()
                reader.evictIfOverLimit()
                if answered.withLock({ $0 }) { reader.revalidateRecentlyRead() }
            })
        return Listed(keptURLs: Set(catalog.placeholderURLs), building: building, arrivals: arrivals, kernel: kernel)
    }

    /// Starts the feeds' fetches and the background pass over the listed
    /// shows now when the mount waits for feeds; otherwise they start once
    /// it is ready, so they take no CPU from getting there.
    private func startFeeds(_ parts: Parts, _ listed: Listed, logger: Logger) -> Feeds {
        let wanted = Set(parts.feedURLs)
        let (reader, answered) = (parts.reader, parts.answered)
        // Feeds that never answered in the last mount (still pending when it
        // ended: a host that hangs) hold no mount that has shows to list.
        let records = parts.feedStatus.records
        let silentBefore = wanted.subtracting(listed.keptURLs).filter { records[$0]?.pending == true }
        // The episodes read last are the likeliest to be reopened: check
        // them with the origin as soon as one feed answered (offline, the
        // checks would only fail), and once more, for those the reader did
        // not know then, when a remount's shows are built from their kept
        // copies (an episode checked or being checked is not asked again).
        let refresher = FeedRefresher(
            urls: parts.feedURLs, interval: refreshInterval, limits: feedLimits, loader: parts.loader,
            catalog: parts.catalog, reader: reader, statusStore: parts.feedStatus, logger: logger,
            onInstalled: { [keeper = parts.keeper] in keeper.poke() },
            onFirstAnswer: {
                answered.withLock { $0 = true }
                reader.revalidateRecentlyRead()
            },
            onListed: { [arrivals = listed.arrivals] url in arrivals.listed(url) })
        // What the mount waits for before it is ready: a cold mount, every
        // feed; one with shows to list, the feeds it has nothing of, except
        // those that never answered last time.
        let waitFor = listed.keptURLs.isEmpty ? wanted : wanted.subtracting(listed.keptURLs).subtracting(silentBefore)
        let startEarly = !waitFor.isEmpty
        if startEarly {
            listed.building?.start()
            listed.arrivals.start()
            refresher.start()
        } else {
            parts.feedStatus.markPending(urls: parts.feedURLs)
        }
        return Feeds(refresher: refresher, waitFor: waitFor, startEarly: startEarly)
    }

    /// Waits until the mount is ready: a cold mount when its feeds are in,
    /// or after a short deadline; a mount with shows to list far less for
    /// the feeds it has nothing of. Shows that come later appear when they
    /// come. Returns the feeds still loading and the ones left out (why);
    /// throws when there is nothing to show and nothing on its way.
    private func waitUntilReady(
        _ parts: Parts, _ listed: Listed, _ feeds: Feeds
    ) throws -> (waiting: Set<String>, failures: [String]) {
        let wanted = Set(parts.feedURLs)
        let feedStatus = parts.feedStatus
        let waiting = feeds.refresher.waitForAnswers(
            from: feeds.waitFor, timeout: listed.keptURLs.isEmpty ? readyDeadline : warmReadyDeadline)
            .union(wanted.subtracting(listed.keptURLs).subtracting(feeds.waitFor))
        // A feed still waiting but answered once is waiting for its retry
        // (a Retry-After): with nothing to show, that is a failure to say.
        let unanswered = waiting.filter { feedStatus.record(url: $0)?.pending == true }
        let shown = parts.catalog.feedURLs.union(parts.catalog.placeholderURLs)
        let failures = parts.feedURLs.filter { !shown.contains($0) && !unanswered.contains($0) }.map { url in
            "\(FeedURL.redacted(url, for: .log)): \(feedStatus.record(url: url)?.detail ?? "unknown")"
        }
        // An empty list mounts an empty root, ready for `podfs subscribe`.
        if shown.isEmpty && unanswered.isEmpty && !parts.feedURLs.isEmpty {
            stopFeeds(parts, listed, feeds)
            throw MountError(
                "no feed could be loaded and none is cached:\n  " + failures.joined(separator: "\n  ")
                    + "\nCheck the URL and the network, then mount again.")
        }
        return (waiting, failures)
    }

    /// Stops the feeds before a mount that never served.
    private func stopFeeds(_ parts: Parts, _ listed: Listed, _ feeds: Feeds) {
        listed.arrivals.stop()
        feeds.refresher.requestStop()
        parts.keeper.requestStop()
        parts.reader.noteStopping()
        parts.client.shutdown()
        feeds.refresher.waitUntilStopped()
        listed.arrivals.waitUntilStopped()
    }

    /// From here on a feed that lands, and a reader that finds an episode
    /// changed, tell the kernel what changed.
    private func attach(_ session: FUSESession, _ parts: Parts, _ listed: Listed, _ feeds: Feeds, logger: Logger) {
        feeds.refresher.attach(invalidator: session)
        listed.kernel.withLock { $0 = session }
        parts.reader.attach(invalidator: session)
        let readAhead = session.setReadAhead(kib: readAheadKiB)
        if readAhead < readAheadKiB {
            logger.notice(
                "readahead_kb=\(readAheadKiB) lowered to \(readAhead): larger reads could not be answered from the cache by splicing (fs.pipe-max-size) and were measured slower")
        }
        parts.reader.startFlushing(interval: commitInterval)
        parts.reader.warmUp()
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)", "cache": "\(cacheDirectory)"])
    }

    /// After the loop: the feeds stop first (shutting the client down cuts
    /// a refresh's fetch short, and nothing invalidates after the session
    /// closes), then the index is saved and the session closed.
    private func tearDown(_ session: FUSESession, _ parts: Parts, _ listed: Listed, _ feeds: Feeds, logger: Logger) {
        logger.info("unmounting: saving the cache index")
        listed.building?.stop()
        listed.arrivals.stop()
        feeds.refresher.requestStop()
        parts.keeper.requestStop()
        parts.reader.noteStopping()
        parts.client.shutdown()
        listed.building?.waitUntilStopped()
        listed.arrivals.waitUntilStopped()
        feeds.refresher.requestStop()
        feeds.refresher.waitUntilStopped()
        // After the client: a download's open or fill ends at once.
        parts.keeper.stop()
        parts.scanAhead.stop()
        ShowList.write(parts.catalog.placeholdersToSave, directory: cacheDirectory, logger: logger)
        parts.reader.stopFlushing()
        parts.index.checkpoint()
        session.close()
        parts.reader.detachInvalidator()
    }
}
