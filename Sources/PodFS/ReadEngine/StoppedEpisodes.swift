import Locking

/// The episodes stopped by a durable step that failed
/// (`EpisodeReader+Unfinished`), and when their steps are tried again: a
/// timer of their own, after 1 s, then twice as long each time they fail
/// again, at most `longestDelay`; and each flush pass. So a stopped
/// episode waits seconds for its retry, not a `commit_interval` (which
/// may be an hour). Its lock is a leaf.
final class StoppedEpisodes: Sendable {
    // MARK: - Nested types

    private struct State {
        var episodes: [ObjectIdentifier: Episode] = [:]
        /// A timer is set and has not fired.
        var timerSet = false
        /// The next timer's delay.
        var delay = StoppedEpisodes.firstDelay
        /// The reader stopped: no timer is set from now on.
        var closed = false
    }

    // MARK: - Properties

    static let firstDelay = 1.0
    static let longestDelay = 30.0

    private let state = Locked(State())

    // MARK: - Methods

    /// `episode` waits for its steps.
    func mark(_ episode: Episode) {
        state.withLock { $0.episodes[ObjectIdentifier(episode)] = episode }
    }

    /// Every episode waiting, forgotten here: the caller tries their steps
    /// and marks again those that fail.
    func takeAll() -> [Episode] {
        state.withLock { state in
            defer { state.episodes.removeAll() }
            return Array(state.episodes.values)
        }
    }

    /// The delay of a timer to set now, or `nil` when one is set already,
    /// nothing waits, or the reader stopped. Each timer set doubles the
    /// next one's delay, up to `longestDelay`.
    func timerToSet() -> Double? {
        state.withLock { state in
            guard !state.timerSet, !state.closed, !state.episodes.isEmpty else { return nil }
            state.timerSet = true
            defer { state.delay = min(state.delay * 2, Self.longestDelay) }
            return state.delay
        }
    }

    /// The timer fired: whether to try the steps (not after the reader
    /// stopped).
    func timerFired() -> Bool {
        state.withLock { state in
            state.timerSet = false
            return !state.closed
        }
    }

    /// Every step was done: the next failure waits `firstDelay` again.
    func allDone() {
        state.withLock { state in
            if state.episodes.isEmpty { state.delay = Self.firstDelay }
        }
    }

    /// The reader stopped (its last try done): no timer fires a try.
    func close() {
        state.withLock { $0.closed = true }
    }
}
