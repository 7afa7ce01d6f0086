import Dispatch
import Foundation
import Locking
import PodFS

/// Builds the shows a round listed on arrival (`Catalog.listArrived`), in
/// the background, a batch at a time, on a thread of its own at the
/// background priority, once arrivals pause: while a round's feeds keep
/// landing, the CPU goes to listing them. A show something looks into
/// first is built at once by the catalogue; this pass skips it
/// (docs/DESIGN.md, "Feeds").
final class ArrivalBuilds: Sendable {
    // MARK: - Nested types

    private struct Queue {
        var urls: [String] = []
        /// When the last show was listed (monotonic seconds).
        var lastArrival: Double = 0
        var stopping = false
    }

    // MARK: - Properties

    /// How long arrivals must pause before a batch is built (seconds).
    /// `PODFS_TEST_ARRIVAL_PAUSE` is for the integration tests only: a
    /// longer pause keeps shows listed and not built while a test acts.
    static let pause =
        ProcessInfo.processInfo.environment["PODFS_TEST_ARRIVAL_PAUSE"].flatMap(Double.init)
        .flatMap { $0.isFinite && $0 >= 0 && $0 <= 3600 ? $0 : nil } ?? 0.25
    /// Shows built in one batch (one registration, one install).
    static let batchSize = 16

    /// Builds the shows of these URLs that are still placeholders.
    private let build: @Sendable (_ urls: [String]) -> Void
    /// Run when the queue is empty after a build.
    private let whenDone: @Sendable () -> Void
    private let queue = Locked(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Locked(false)

    // MARK: - Init

    init(build: @escaping @Sendable (_ urls: [String]) -> Void, whenDone: @escaping @Sendable () -> Void) {
        self.build = build
        self.whenDone = whenDone
    }

    // MARK: - Methods

    func start() {
        guard started.withLock({ started in defer { started = true }; return !started }) else { return }
        BackgroundPriority.startThread(named: "podfs-arrivals") { [self] in
            run()
            ended.signal()
        }
    }

    /// A show was listed on arrival: to build.
    func listed(_ url: String) {
        queue.withLock { queue in
            queue.urls.append(url)
            queue.lastArrival = Self.now()
        }
        wake.signal()
    }

    /// Stops between batches.
    func stop() {
        queue.withLock { $0.stopping = true }
        wake.signal()
    }

    func waitUntilStopped() {
        guard started.withLock({ $0 }) else { return }
        ended.wait()
    }

    // MARK: - Private methods

    private func run() {
        while true {
            let (batch, waitFor) = queue.withLock { queue -> (batch: [String]?, waitFor: Double?) in
                if queue.stopping { return (nil, nil) }
                if queue.urls.isEmpty { return ([], nil) }
                let quiet = Self.now() - queue.lastArrival
                guard quiet >= Self.pause else { return ([], Self.pause - quiet) }
                let batch = Array(queue.urls.prefix(Self.batchSize))
                queue.urls.removeFirst(batch.count)
                return (batch, 0)
            }
            guard let batch else { return }
            if !batch.isEmpty {
                build(batch)
                if queue.withLock({ $0.urls.isEmpty }) { whenDone() }
                continue
            }
            if let waitFor {
                _ = wake.wait(timeout: .now() + waitFor)
            } else {
                wake.wait()
            }
        }
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
