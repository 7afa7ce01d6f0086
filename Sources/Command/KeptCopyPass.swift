import Foundation
import Locking
import Logging
import PodFS

/// Builds the shows a mount listed from the last one (placeholders) from
/// their kept copies, on a thread of its own, then runs `then` (the first
/// round of fetches). A show something looks into first is built at once
/// by the catalogue; this pass skips it.
final class KeptCopyPass: Sendable {
    private let urls: [String]
    private let loader: FeedLoader
    private let catalog: Catalog
    private let adopt: @Sendable ([Catalog.Show]) -> Void
    private let logger: Logger
    private let then: @Sendable () -> Void
    /// Told each placeholder dropped because its kept copy gave no show.
    private let dropped: @Sendable (Catalog.Placeholder?) -> Void
    /// Set to stop between batches. Guarded by its lock.
    private let stopping = Locked(false)
    private let ended = DispatchSemaphore(value: 0)

    init(
        urls: [String], loader: FeedLoader, catalog: Catalog, adopt: @escaping @Sendable ([Catalog.Show]) -> Void,
        logger: Logger, dropped: @escaping @Sendable (Catalog.Placeholder?) -> Void,
        then: @escaping @Sendable () -> Void
    ) {
        self.dropped = dropped
        self.urls = urls
        self.loader = loader
        self.catalog = catalog
        self.adopt = adopt
        self.logger = logger
        self.then = then
    }

    func start() {
        BackgroundPriority.startThread(named: "podfs-kept") { [self] in
            run()
            ended.signal()
        }
    }

    func stop() {
        stopping.withLock { $0 = true }
    }

    func waitUntilStopped() {
        ended.wait()
    }

    private func run() {
        let started = Date()
        do {
            _ = try MountService.showKeptCopies(
                of: urls, loader: loader, catalog: catalog, adopt: adopt, shouldStop: { stopping.withLock { $0 } })
        } catch {
            logger.error("could not show the kept copies", metadata: ["error": "\(error)"])
        }
        guard !stopping.withLock({ $0 }) else { return }
        // A placeholder of this pass whose kept copy gave no show waits for
        // its feed; one listed on arrival meanwhile is `ArrivalBuilds`'s.
        let left = Set(catalog.placeholderURLs)
        for url in urls where left.contains(url) { dropped(catalog.dropPlaceholder(url: url)) }
        logger.info(
            "kept copies shown",
            metadata: [
                "feeds": "\(catalog.shows.count)", "episodes": "\(catalog.episodeCount)",
                "seconds": "\(Date().timeIntervalSince(started))",
            ])
        then()
    }
}
