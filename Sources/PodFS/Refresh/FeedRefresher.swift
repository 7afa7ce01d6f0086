import Dispatch
public import FUSEBridge
public import Feeds
import Foundation
public import Logging
import Locking

/// Fetches every feed of a mount: once as the mount starts, then on an
/// interval, on a thread of its own; each round fetches concurrently within
/// the bounds of `FeedSchedule` (docs/DESIGN.md, "Feeds").
///
/// A feed that changed gets its new listing in the catalogue as soon as its
/// fetch lands; one the mount did not show yet is listed at once and built
/// from its kept copy by the mount's background pass (`onListed`) or when
/// looked into, unless its copy could not be kept (a full disk): that
/// build would find an older copy or none, so it is built at once from the
/// feed in hand. The kernel is told to forget what it cached of the show
/// folder (names that came or went, the folder's attributes, the
/// playlist) — from this thread, never from inside a request handler
/// (libfuse `doc/README.notifications`).
/// A feed that fails to fetch or parse keeps its listing; the log and
/// `podfs status` say why.
public final class FeedRefresher: Sendable {
    // MARK: - Nested types

    private enum Lifecycle {
        case idle
        case running
        case stopping
        case stopped
    }

    // MARK: - Properties

    /// Every subscribed feed, in list order (also those that failed at
    /// mount): the SOURCE's at first, then as `subscribe` and
    /// `unsubscribe` change it. A round fetches the list as it was when
    /// the round began.
    private let subscribed: Locked<[String]>
    /// Seconds between rounds; `nil`: only the first round.
    private let interval: Double?
    private let limits: FeedSchedule.Limits
    private let loader: FeedLoader
    private let catalog: Catalog
    private let reader: EpisodeReader
    private let statusStore: FeedStatusStore
    private let logger: Logger
    private let invalidator = Locked<(any KernelCacheInvalidator)?>(nil)
    /// Feeds with files moved to another file while they were read, to be
    /// renewed from the kept copy at the next round (`install`).
    private let deferredRenewals = Locked<Set<String>>([])
    /// Told each time a feed's files were installed (the keeper plans
    /// again).
    private let onInstalled: @Sendable () -> Void
    /// Called once, when the first feed of the mount fetched well.
    private let onFirstAnswer: @Sendable () -> Void
    /// Told each feed listed on arrival (`Catalog.listArrived`), for the
    /// mount's background pass to build from its kept copy; `nil`: a feed
    /// new to the mount is built at once.
    private let onListed: (@Sendable (_ url: String) -> Void)?
    private let hadAnAnswer = Locked(false)
    private let lifecycle = Locked(Lifecycle.idle)
    /// Signalled to wake the thread early (stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the thread has ended.
    private let ended = DispatchSemaphore(value: 0)
    /// The round under way, for `requestStop`.
    private let round = Locked<FeedRound?>(nil)
    /// Feeds that had an answer (good or bad) in this mount. Guarded by its
    /// lock; `answered` is signalled after each new one.
    private let answeredURLs = Locked<Set<String>>([])
    private let answered = DispatchSemaphore(value: 0)

    // MARK: - Init

    public init(
        urls: [String], interval: Double?, limits: FeedSchedule.Limits = .standard, loader: FeedLoader,
        catalog: Catalog, reader: EpisodeReader, statusStore: FeedStatusStore, logger: Logger,
        onInstalled: @escaping @Sendable () -> Void = {},
        onFirstAnswer: @escaping @Sendable () -> Void = {},
        onListed: (@Sendable (_ url: String) -> Void)? = nil
    ) {
        self.onListed = onListed
        self.onInstalled = onInstalled
        self.onFirstAnswer = onFirstAnswer
        self.subscribed = Locked(urls)
        self.interval = interval
        self.limits = limits
        self.loader = loader
        self.catalog = catalog
        self.reader = reader
        self.statusStore = statusStore
        self.logger = logger
    }

    // MARK: - Methods

    /// Lets refreshes drop the kernel's cached names and attributes.
    public func attach(invalidator: any KernelCacheInvalidator) {
        self.invalidator.withLock { $0 = invalidator }
    }

    /// Starts the thread: the first round now, the next ones every
    /// interval.
    public func start() {
        let starting = lifecycle.withLock { state -> Bool in
            guard state == .idle else { return false }
            state = .running
            return true
        }
        guard starting else { return }
        // Pending from now, not from when the thread gets to it: a mount
        // reads these records as soon as this returns.
        note(statusStore.markPending(urls: subscribedURLs))
        let thread = Thread { [self] in
            FeedRound.blockTerminationSignals()
            refreshAll()
            if let interval {
                while wake.wait(timeout: .now() + interval) == .timedOut {
                    guard lifecycle.withLock({ $0 == .running }) else { break }
                    refreshAll()
                }
            }
            ended.signal()
        }
        thread.name = "podfs-refresh"
        thread.start()
        logger.info(
            "fetching feeds in the background",
            metadata: [
                "interval.seconds": "\(interval.map { "\($0)" } ?? "off")", "feeds": "\(subscribedURLs.count)",
                "limit.total": "\(limits.total)", "limit.per_host": "\(limits.perHost)",
            ])
    }

    /// Asks the thread to stop; fetches under way end when their transfer
    /// does (shut the HTTP client down to cut them short). Then
    /// `waitUntilStopped`.
    public func requestStop() {
        let wasRunning = lifecycle.withLock { state -> Bool in
            // Never started: no thread to wait for.
            defer { state = state == .idle ? .stopped : state == .stopped ? .stopped : .stopping }
            return state == .running
        }
        round.withLock { $0 }?.stop()
        if wasRunning { wake.signal() }
    }

    /// Waits for the thread to end (after `requestStop`).
    public func waitUntilStopped() {
        let wasRunning = lifecycle.withLock { state -> Bool in
            defer { state = .stopped }
            return state == .stopping || state == .running
        }
        if wasRunning { ended.wait() }
    }

    /// Fetches every feed once, concurrently within the bounds, and returns
    /// when all have ended.
    public func refreshAll() {
        let urls = subscribedURLs
        let current = FeedRound(urls: urls, limits: limits, settled: { [self] url in answer(url) }) { [self] url, _ in
            guard lifecycle.withLock({ $0 == .running || $0 == .idle }) else { return .settled }
            return refresh(url: url)
        }
        note(statusStore.markPending(urls: urls))
        round.withLock { $0 = current }
        guard lifecycle.withLock({ $0 == .running || $0 == .idle }) else { return }
        current.start()
        // The status file catches up with the records while the round runs.
        while !current.wait(timeout: 1) { note(statusStore.flush()) }
        round.withLock { $0 = nil }
        note(statusStore.flush())
        // The round's parses left freed heap behind; give it back (once a
        // round: it walks the whole heap).
        Heap.giveBackFreedMemory()
    }

    /// The subscribed feeds, in list order.
    public var subscribedURLs: [String] {
        subscribed.withLock { $0 }
    }

    /// Subscribes to the feed at `url`, whose copy `feed` was just fetched
    /// and kept: its folder is in the root when this returns, and the
    /// feed is refreshed with the others from now on. Returns what
    /// changed (`nil`: it was subscribed already and nothing changed).
    public func subscribe(url: String, feed: ParsedFeed) throws -> Catalog.Change? {
        let added = subscribed.withLock { list -> Bool in
            guard !list.contains(url) else { return false }
            list.append(url)
            return true
        }
        // Subscribed already: its rounds keep it current.
        guard added else { return nil }
        do {
            let change = try install(url: url, feed: feed)
            note(url: url, ok: true, detail: "loaded")
            note(statusStore.flush())
            answer(url)
            return change
        } catch {
            subscribed.withLock { $0.removeAll { $0 == url } }
            throw error
        }
    }

    /// Subscribes to the feeds at `urls` and fetches them now, a few at a
    /// time, returning when all have answered; one that fails is fetched
    /// again with the others, as a feed that failed at mount is.
    public func add(urls: [String]) {
        let added = subscribed.withLock { list -> [String] in
            let new = urls.filter { !list.contains($0) }
            list.append(contentsOf: new)
            return new
        }
        guard !added.isEmpty else { return }
        note(statusStore.markPending(urls: added))
        // At most a host's share at once: the new feeds may all be on one host.
        let workers = max(1, min(limits.perHost, added.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for position in stride(from: worker, to: added.count, by: workers)
            where lifecycle.withLock({ $0 == .running || $0 == .idle }) {
                _ = refresh(url: added[position])
                answer(added[position])
            }
        }
        note(statusStore.flush())
    }

    /// Unsubscribes from the feed at `url`: its folder leaves the root now
    /// (open files read on) and no round fetches it again. Returns what
    /// left the root (`nil`: it had no folder).
    @discardableResult
    public func unsubscribe(url: String) -> Catalog.Removal? {
        subscribed.withLock { $0.removeAll { $0 == url } }
        note(statusStore.forget(urls: [url]))
        guard let removal = catalog.remove(url: url) else { return nil }
        invalidate(removal)
        logger.info("unsubscribed", metadata: ["feed.url": .url(url), "show": "\(removal.name)"])
        return removal
    }

    /// Waits until each of `urls` had its answer in this mount (it loaded,
    /// or failed with no retry to come), or `timeout` seconds passed. Returns the URLs still
    /// waiting.
    public func waitForAnswers(from urls: Set<String>, timeout: Double) -> Set<String> {
        let deadline = DispatchTime.now() + timeout
        while true {
            let left = urls.subtracting(answeredURLs.withLock { $0 })
            if left.isEmpty || answered.wait(timeout: deadline) == .timedOut {
                return urls.subtracting(answeredURLs.withLock { $0 })
            }
        }
    }

    // MARK: - Private methods

    /// One attempt at one feed; says whether to try again soon.
    private func refresh(url: String) -> FeedRound.Ended {
        // Unsubscribed since the round began: not asked again.
        guard isSubscribed(url) else { return .settled }
        // A feed the mount does not show yet is asked for in full: its kept
        // copy, if any, did not parse.
        let shown = catalog.isListed(url: url)
        let outcome = loader.refresh(url: url, conditional: shown)
        // A fetch cut short by the unmount says nothing about the feed: it
        // stays pending (a feed still pending when a mount ends holds no
        // next mount).
        guard lifecycle.withLock({ $0 == .running || $0 == .idle }) else { return .settled }
        switch outcome {
        case .notModified:
            logger.debug("feed not modified", metadata: ["feed.url": .url(url)])
            // Files it moved while they were read are renewed from the
            // kept copy once they are not (`Catalog.Change.renewalsDeferred`).
            if deferredRenewals.withLock({ $0.contains(url) }), let feed = loader.kept(url: url) {
                do {
                    _ = try install(url: url, feed: feed)
                } catch {
                    logger.warning(
                        "could not renew the files a feed moved", metadata: ["feed.url": .url(url), "error": "\(error)"])
                }
            }
            note(url: url, ok: true, detail: "not modified")
        case .failed(let reason, let isTransient, let retryAfter):
            logger.warning(
                shown ? "feed refresh failed; keeping the previous listing" : "feed could not be loaded",
                metadata: ["feed.url": .url(url), "reason": "\(reason)"])
            note(url: url, ok: false, detail: shown ? reason + " (showing the last good copy)" : reason)
            return FeedRound.Ended(isTransient: isTransient, retryAfter: retryAfter)
        case .updated(let feed, let kept):
            do {
                // A copy not kept cannot build the show later: built now.
                if !shown, kept, let onListed, let listed = try listOnArrival(url: url, feed: feed) {
                    // Unsubscribed meanwhile: taken out again, nothing to say.
                    guard listed else { return .settled }
                    onListed(url)
                    logger.info(
                        "feed listed", metadata: ["feed.url": .url(url), "episodes": "\(feed.episodes.count)"])
                    note(url: url, ok: true, detail: "updated")
                    return .settled
                }
                guard let change = try install(url: url, feed: feed) else { return .settled }
                logger.info(
                    "feed refreshed",
                    metadata: [
                        "feed.url": .url(url), "files.added": "\(change.addedNames.count)",
                        "files.removed": "\(change.removedNames.count)",
                    ])
                note(url: url, ok: true, detail: "updated")
            } catch {
                let reason = "the new listing could not be registered in the cache index: \(error)"
                logger.error("feed refresh failed; keeping the previous listing", metadata: ["feed.url": .url(url), "reason": "\(reason)"])
                note(url: url, ok: false, detail: reason)
            }
        }
        return .settled
    }

    /// Puts the listing of `feed` in the catalogue, unless the feed was
    /// unsubscribed meanwhile (`nil`). An unsubscribe that lands while the
    /// listing is being built takes it out again: the list is checked
    /// after the catalogue changed, and `unsubscribe` changes the list
    /// before the catalogue, so one of the two always sees the other.
    private func install(url: String, feed: ParsedFeed) throws -> Catalog.Change? {
        guard isSubscribed(url) else { return nil }
        let change = try catalog.update(url: url, feed: feed)
        guard isSubscribed(url) else {
            if let removal = catalog.remove(url: url) { invalidate(removal) }
            return nil
        }
        onInstalled()
        reader.adopt(change.newFiles)
        reader.follow(change.renewed)
        deferredRenewals.withLock { deferred in
            if change.renewalsDeferred { deferred.insert(url) } else { deferred.remove(url) }
        }
        invalidate(change)
        return change
    }

    /// Lists the show of a feed new to the mount before it is built
    /// (`Catalog.listArrived`): `true` when it did, `false` when it did
    /// and the feed was unsubscribed meanwhile (it is taken out again, as
    /// `install` does), `nil` when it did not (the caller builds it).
    private func listOnArrival(url: String, feed: ParsedFeed) throws -> Bool? {
        guard isSubscribed(url) else { return false }
        guard let placeholder = try catalog.listArrived(url: url, feed: feed) else { return nil }
        guard isSubscribed(url) else {
            if let removal = catalog.remove(url: url) { invalidate(removal) }
            return false
        }
        invalidateNewFolder(named: placeholder.name)
        return true
    }

    private func isSubscribed(_ url: String) -> Bool {
        subscribed.withLock { $0.contains(url) }
    }

    /// Tells the kernel a folder left the root.
    private func invalidate(_ removal: Catalog.Removal) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        invalidator.invalidate(inode: Catalog.rootInode)
        invalidator.invalidate(parent: Catalog.rootInode, name: removal.name)
        // Its episodes leave the root's playlist of the newest.
        invalidator.invalidate(inode: Catalog.latestPlaylistInode)
    }

    private func answer(_ url: String) {
        let new = answeredURLs.withLock { $0.insert(url).inserted }
        if new { answered.signal() }
    }

    /// Tells the kernel what changed: new names (it may remember they were
    /// missing), names gone, the folder's and the playlist's attributes and
    /// pages; for a new show, the root; `Latest.m3u` when it changed.
    private func invalidate(_ change: Catalog.Change) {
        guard !change.isEmpty, let invalidator = invalidator.withLock({ $0 }) else { return }
        if change.latestChanged {
            invalidator.invalidate(inode: Catalog.latestPlaylistInode)
            invalidator.invalidate(inode: Catalog.rootInode)
        }
        if change.isNewShow {
            invalidateNewFolder(named: change.showName)
            return
        }
        for name in change.addedNames + change.removedNames {
            invalidator.invalidate(parent: change.showInode, name: name)
        }
        // A file's new date or length; its pages too when its link moved
        // to another file.
        for renewal in change.renewed {
            let (before, after) = (renewal.before, renewal.after)
            if renewal.enclosureMoved {
                invalidator.invalidate(inode: after.inode)
            } else if before.modificationTime != after.modificationTime || before.feedLength != after.feedLength {
                invalidator.invalidateAttributes(inode: after.inode)
            }
        }
        invalidator.invalidate(inode: change.showInode)
        if change.playlistChanged {
            invalidator.invalidate(inode: change.playlistInode)
            // The folder's time may have moved, and the root's is its
            // newest show's (`Catalog.rootModificationTime`).
            invalidator.invalidate(inode: Catalog.rootInode)
        }
    }

    /// Tells the kernel a folder came into the root: it can know nothing
    /// inside a folder that did not exist, so the root and the folder's
    /// name are all it may hold.
    private func invalidateNewFolder(named name: String) {
        guard let invalidator = invalidator.withLock({ $0 }) else { return }
        invalidator.invalidate(inode: Catalog.rootInode)
        invalidator.invalidate(parent: Catalog.rootInode, name: name)
    }

    private func note(url: String, ok: Bool, detail: String) {
        if ok, hadAnAnswer.withLock({ had in defer { had = true }; return !had }) { onFirstAnswer() }
        note(statusStore.record(url: url, ok: ok, detail: detail))
    }

    private func note(_ problem: String?) {
        if let problem {
            logger.warning("could not record the feed's refresh for podfs status", metadata: ["error": "\(problem)"])
        }
    }
}
