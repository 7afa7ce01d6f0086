import Dispatch
import Foundation

/// One round of feed fetches: every feed once (and its retries), on a few
/// worker threads, in the order and within the bounds `FeedSchedule`
/// decides (docs/DESIGN.md, "Feeds").
///
/// The work for one feed is a blocking call (a fetch, a parse, a catalogue
/// update); a feed whose host hangs holds one worker until its fetch times
/// out, and the other workers go on with the other hosts.
public final class FeedRound: @unchecked Sendable {
    // MARK: - Nested types

    /// How one attempt at a feed ended, for the schedule.
    public struct Ended: Sendable, Equatable {
        /// Whether trying again may succeed (408, 429, 5xx).
        public var isTransient: Bool
        /// Seconds the origin asked to wait (`Retry-After`).
        public var retryAfter: Double?

        public init(isTransient: Bool = false, retryAfter: Double? = nil) {
            self.isTransient = isTransient
            self.retryAfter = retryAfter
        }

        /// The attempt needs no retry.
        public static let settled = Ended()
    }

    // MARK: - Properties

    /// Guards `schedule`, `stopped` and `workersLeft` (the class is
    /// `@unchecked Sendable` for them: they are touched only while it is
    /// held).
    private let condition = NSCondition()
    private var schedule: FeedSchedule
    private var stopped = false
    private var workersLeft = 0
    private let work: @Sendable (_ url: String, _ attempt: Int) -> Ended
    /// Told when a feed is done for this round (no retry follows).
    private let settled: @Sendable (_ url: String) -> Void
    private let longestRetryWait: Double

    // MARK: - Init

    /// `work` is called once per attempt, on a worker thread; `settled`
    /// once per feed, after its last attempt of the round.
    public init(
        urls: [String], limits: FeedSchedule.Limits, longestRetryWait: Double = 300,
        settled: @escaping @Sendable (_ url: String) -> Void = { _ in },
        work: @escaping @Sendable (_ url: String, _ attempt: Int) -> Ended
    ) {
        schedule = FeedSchedule(urls: urls, limits: limits)
        self.work = work
        self.settled = settled
        self.longestRetryWait = longestRetryWait
    }

    // MARK: - Methods

    /// Starts the workers: as many as the total bound allows, no more than
    /// there are feeds.
    public func start() {
        let count = condition.withLock { () -> Int in
            workersLeft = min(schedule.limits.total, schedule.pendingCount)
            return workersLeft
        }
        for number in 0..<count {
            let thread = Thread { [self] in
                Self.blockTerminationSignals()
                BackgroundPriority.lowerCallingThread()
                runWorker()
            }
            thread.name = "podfs-feed-\(number)"
            thread.start()
        }
    }

    /// Starts no more fetches; those running end when their fetch does.
    public func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Waits until every feed of the round ended, or `timeout` seconds
    /// passed; returns whether the round is over.
    @discardableResult
    public func wait(timeout: Double = .infinity) -> Bool {
        let deadline = timeout.isFinite ? Date(timeIntervalSinceNow: timeout) : Date.distantFuture
        condition.lock()
        defer { condition.unlock() }
        while workersLeft > 0 {
            if !condition.wait(until: deadline) { return workersLeft == 0 }
        }
        return true
    }

    /// Feeds not ended yet.
    public var pendingCount: Int {
        condition.withLock { schedule.pendingCount }
    }

    /// Leaves SIGINT/SIGTERM to the FUSE loop's thread
    /// (docs/FUSE-SWIFT-NOTES.md, "Signals").
    public static func blockTerminationSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    // MARK: - Private methods

    private func runWorker() {
        condition.lock()
        defer {
            workersLeft -= 1
            condition.broadcast()
            condition.unlock()
        }
        while !stopped {
            switch schedule.next(now: Self.now()) {
            case .start(let url, let attempt):
                condition.unlock()
                let ended = work(url, attempt)
                condition.lock()
                let retry = schedule.ended(
                    url: url, now: Self.now(), transient: ended.isTransient, retryAfter: ended.retryAfter,
                    longestWait: longestRetryWait)
                condition.broadcast()
                if retry == nil {
                    condition.unlock()
                    settled(url)
                    condition.lock()
                }
            case .wait(let until):
                _ = condition.wait(until: Date(timeIntervalSinceNow: max(0, until - Self.now())))
            case .waitForAFetch:
                condition.wait()
            case .done:
                return
            }
        }
    }

    /// A clock that only goes forward, in seconds.
    private static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}
