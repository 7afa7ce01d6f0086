import Dispatch
public import FUSEBridge
import Foundation
public import Logging
import Locking

/// Fetches every feed of a mount: once as the mount starts, then on an
/// interval, on a thread of its own; each round fetches concurrently within
/// the bounds of `FeedSchedule` (docs/DESIGN.md, "Feeds").
///
/// A feed that changed, or one the mount did not show yet, gets its new
/// listing in the catalogue as soon as its fetch lands. A feed that changed gets its new listing in the catalogue, and the
/// kernel is told to forget what it cached of the show folder (names that
/// came or went, the folder's attributes, the playlist) — from this thread,
/// never from inside a request handler (libfuse `doc/README.notifications`).
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

    /// Every SOURCE feed, in SOURCE order (also those that failed at mount).
    private let urls: [String]
    /// Seconds between rounds; `nil`: only the first round.
    private let interval: Double?
    private let limits: FeedSchedule.Limits
    private let loader: FeedLoader
    private let catalog: Catalog
    private let reader: EpisodeReader
    private let statusStore: FeedStatusStore
    private let logger: Logger
    private let invalidator = Locked<(any KernelCacheInvalidator)?>(nil)
    /// Told the new files of a feed (their URLs and the feed's), before any
    /// of them can be opened: the address-zone rule learns who listed them.
    private let onNewFiles: @Sendable (_ urls: [String], _ feedURL: String) -> Void
    /// Called once, when the first feed of the mount fetched well.
    private let onFirstAnswer: @Sendable () -> Void
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
        onNewFiles: @escaping @Sendable (_ urls: [String], _ feedURL: String) -> Void = { _, _ in },
        onFirstAnswer: @escaping @Sendable () -> Void = {}
    ) {
        self.onNewFiles = onNewFiles
        self.onFirstAnswer = onFirstAnswer
        self.urls = urls
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
        note(statusStore.markPending(urls: urls))
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
                "interval.seconds": "\(interval.map { "\($0)" } ?? "off")", "feeds": "\(urls.count)",
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
        // A feed the mount does not show yet is asked for in full: its kept
        // copy, if any, did not parse.
        let shown = catalog.feedURLs.contains(url) || catalog.placeholderURLs.contains(url)
        let outcome = loader.refresh(url: url, conditional: shown)
        // A fetch cut short by the unmount says nothing about the feed: it
        // stays pending (a feed still pending when a mount ends holds no
        // next mount).
        guard lifecycle.withLock({ $0 == .running || $0 == .idle }) else { return .settled }
        switch outcome {
        case .notModified:
            logger.debug("feed not modified", metadata: ["feed.url": .url(url)])
            note(url: url, ok: true, detail: "not modified")
        case .failed(let reason, let isTransient, let retryAfter):
            logger.warning(
                shown ? "feed refresh failed; keeping the previous listing" : "feed could not be loaded",
                metadata: ["feed.url": .url(url), "reason": "\(reason)"])
            note(url: url, ok: false, detail: shown ? reason + " (showing the last good copy)" : reason)
            return FeedRound.Ended(isTransient: isTransient, retryAfter: retryAfter)
        case .updated(let feed):
            do {
                let change = try catalog.update(url: url, feed: feed)
                onNewFiles(change.newFiles.map(\.url), url)
                reader.adopt(change.newFiles)
                invalidate(change)
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
            // The kernel can know nothing inside a folder that did not
            // exist: the root and the folder's name are all it may hold.
            invalidator.invalidate(inode: Catalog.rootInode)
            invalidator.invalidate(parent: Catalog.rootInode, name: change.showName)
            return
        }
        for name in change.addedNames + change.removedNames {
            invalidator.invalidate(parent: change.showInode, name: name)
        }
        invalidator.invalidate(inode: change.showInode)
        if change.playlistChanged {
            invalidator.invalidate(inode: change.playlistInode)
            // The folder's time may have moved, and the root's is its
            // newest show's (`Catalog.rootModificationTime`).
            invalidator.invalidate(inode: Catalog.rootInode)
        }
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
