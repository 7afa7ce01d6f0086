import Dispatch
public import FUSEBridge
import Foundation
public import Logging
import Locking

/// Refreshes every feed of a mount on an interval, on a thread of its own.
///
/// A feed that changed gets its new listing in the catalogue, and the
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
    private let interval: Double
    private let loader: FeedLoader
    private let catalog: Catalog
    private let reader: EpisodeReader
    private let statusStore: FeedStatusStore
    private let logger: Logger
    private let invalidator = Locked<(any KernelCacheInvalidator)?>(nil)
    /// Told the new files of a feed (their URLs and the feed's), before any
    /// of them can be opened: the address-zone rule learns who listed them.
    private let onNewFiles: @Sendable (_ urls: [String], _ feedURL: String) -> Void
    private let lifecycle = Locked(Lifecycle.idle)
    /// Signalled to wake the thread early (stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the thread has ended.
    private let ended = DispatchSemaphore(value: 0)

    // MARK: - Init

    public init(
        urls: [String], interval: Double, loader: FeedLoader, catalog: Catalog, reader: EpisodeReader,
        statusStore: FeedStatusStore, logger: Logger,
        onNewFiles: @escaping @Sendable (_ urls: [String], _ feedURL: String) -> Void = { _, _ in }
    ) {
        self.onNewFiles = onNewFiles
        self.urls = urls
        self.interval = interval
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

    /// Starts the thread: the first refresh comes one interval from now.
    public func start() {
        let starting = lifecycle.withLock { state -> Bool in
            guard state == .idle else { return false }
            state = .running
            return true
        }
        guard starting else { return }
        let thread = Thread { [self] in
            Self.blockTerminationSignals()
            while wake.wait(timeout: .now() + interval) == .timedOut {
                guard lifecycle.withLock({ $0 == .running }) else { break }
                refreshAll()
            }
            ended.signal()
        }
        thread.name = "podfs-refresh"
        thread.start()
        logger.info("refreshing feeds in the background", metadata: ["interval.seconds": "\(interval)"])
    }

    /// Asks the thread to stop; a refresh under way ends when its fetch does
    /// (shut the HTTP client down to cut it short). Then `waitUntilStopped`.
    public func requestStop() {
        let wasRunning = lifecycle.withLock { state -> Bool in
            defer { if state != .stopped { state = .stopping } }
            return state == .running
        }
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

    /// Refreshes every feed once, in SOURCE order.
    public func refreshAll() {
        for url in urls {
            guard lifecycle.withLock({ $0 == .running || $0 == .idle }) else { return }
            refresh(url: url)
        }
    }

    // MARK: - Private methods

    private func refresh(url: String) {
        switch loader.refresh(url: url) {
        case .notModified:
            logger.debug("feed not modified", metadata: ["feed.url": .url(url)])
            note(url: url, ok: true, detail: "not modified")
        case .failed(let reason):
            logger.warning(
                "feed refresh failed; keeping the previous listing", metadata: ["feed.url": .url(url), "reason": "\(reason)"])
            note(url: url, ok: false, detail: reason)
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
                // The new copy's parse left freed heap behind; give it back.
                Heap.giveBackFreedMemory()
            } catch {
                let reason = "the new listing could not be registered in the cache index: \(error)"
                logger.error("feed refresh failed; keeping the previous listing", metadata: ["feed.url": .url(url), "reason": "\(reason)"])
                note(url: url, ok: false, detail: reason)
            }
        }
    }

    /// Tells the kernel what changed: new names (it may remember they were
    /// missing), names gone, the folder's and the playlist's attributes and
    /// pages; for a new show, the root.
    private func invalidate(_ change: Catalog.Change) {
        guard !change.isEmpty, let invalidator = invalidator.withLock({ $0 }) else { return }
        if change.isNewShow {
            invalidator.invalidate(inode: Catalog.rootInode)
            invalidator.invalidate(parent: Catalog.rootInode, name: change.showName)
        }
        for name in change.addedNames + change.removedNames {
            invalidator.invalidate(parent: change.showInode, name: name)
        }
        invalidator.invalidate(inode: change.showInode)
        if change.playlistChanged { invalidator.invalidate(inode: change.playlistInode) }
    }

    private func note(url: String, ok: Bool, detail: String) {
        if let problem = statusStore.record(url: url, ok: ok, detail: detail) {
            logger.warning("could not record the feed's refresh for podfs status", metadata: ["error": "\(problem)"])
        }
    }

    /// Leaves SIGINT/SIGTERM to the FUSE loop's thread
    /// (docs/FUSE-SWIFT-NOTES.md, "Signals").
    private static func blockTerminationSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}
