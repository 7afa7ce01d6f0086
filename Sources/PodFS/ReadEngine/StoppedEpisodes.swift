import Locking

/// The episodes stopped by a durable step that failed
/// (`Durability.retryUnfinishedSteps`), and when their steps are tried again: a
/// timer of their own, after 1 s, then twice as long each time they fail
/// again, at most `longestDelay`; and each flush pass. So a stopped
/// episode waits seconds for its retry, not a `commit_interval` (which
/// may be an hour). Its lock is a leaf.
final class StoppedEpisodes: Sendable {
    // MARK: - Nested types

    /// When the next try comes.
    private struct Timer {
        /// A timer is set and has not fired.
        var set = false
        /// The next timer's delay.
        var delay = StoppedEpisodes.firstDelay
        /// The reader stopped: no timer is set from now on.
        var closed = false
    }

    // MARK: - Properties

    static let firstDelay = 1.0
    static let longestDelay = 30.0

    /// The episodes waiting (a leaf lock, never held with `timer`'s).
    private let episodes = DirtyEpisodes()
    private let timer = Locked(Timer())

    // MARK: - Methods

    /// `episode` waits for its steps.
    func mark(_ episode: Episode) {
        episodes.mark(episode)
    }

    /// Every episode waiting, forgotten here: the caller tries their steps
    /// and marks again those that fail.
    func takeAll() -> [Episode] {
        episodes.takeAll()
    }

    /// The delay of a timer to set now, or `nil` when one is set already,
    /// nothing waits, or the reader stopped. Each timer set doubles the
    /// next one's delay, up to `longestDelay`.
    func timerToSet() -> Double? {
        let waiting = !episodes.isEmpty
        return timer.withLock { timer in
            guard !timer.set, !timer.closed, waiting else { return nil }
            timer.set = true
            defer { timer.delay = min(timer.delay * 2, Self.longestDelay) }
            return timer.delay
        }
    }

    /// The timer fired: whether to try the steps (not after the reader
    /// stopped).
    func timerFired() -> Bool {
        timer.withLock { timer in
            timer.set = false
            return !timer.closed
        }
    }

    /// Every step was done: the next failure waits `firstDelay` again.
    func allDone() {
        guard episodes.isEmpty else { return }
        timer.withLock { $0.delay = Self.firstDelay }
    }

    /// The reader stopped (its last try done): no timer fires a try.
    func close() {
        timer.withLock { $0.closed = true }
    }
}
