import Foundation
import Locking

/// The episodes whose cached ranges or validator changed since the index
/// last heard of them: what the next flush commits
/// (`Durability.flush`). Its lock is a leaf: episodes are added by the
/// network and writer threads, and taken all at once by the flush.
final class DirtyEpisodes: Sendable {
    private let episodes = Locked<[ObjectIdentifier: Episode]>([:])

    /// `episode` has something to commit.
    func mark(_ episode: Episode) {
        episodes.withLock { $0[ObjectIdentifier(episode)] = episode }
    }

    /// Every episode marked, forgotten here: the caller commits them, or
    /// marks them again when that fails.
    func takeAll() -> [Episode] {
        episodes.withLock { dirty in
            defer { dirty.removeAll() }
            return Array(dirty.values)
        }
    }

    var isEmpty: Bool { episodes.withLock(\.isEmpty) }
}

/// The flush thread (`podfs-flush`): runs its pass every interval until
/// stopped, then stops for good. Its lock (`state`) is a leaf; the pass
/// runs outside it.
final class FlushThread: Sendable {
    private enum State {
        case idle
        case running
        case stopping
        case stopped
    }

    private let state = Locked(State.idle)
    /// Signalled by `stop`: the thread wakes from its wait at once, so an
    /// unmount never waits out a long interval.
    private let wake = DispatchSemaphore(value: 0)

    /// Runs `prepare`, then starts the thread, which runs `pass` every
    /// `interval` seconds (1 if not positive). Nothing if it was started
    /// before.
    func start(interval: Double, prepare: () -> Void, pass: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            guard state == .idle else { return false }
            state = .running
            return true
        }
        guard start else { return }
        prepare()
        let tick = interval > 0 ? interval : 1
        let thread = Thread { [self] in
            FeedRound.blockTerminationSignals()
            while state.withLock({ $0 == .running }) {
                // Woken early: stopping, and the caller commits what is left.
                guard wake.wait(timeout: .now() + tick) == .timedOut, state.withLock({ $0 == .running }) else { break }
                pass()
            }
            state.withLock { $0 = .stopped }
        }
        thread.name = "podfs-flush"
        thread.start()
    }

    /// Stops the thread and waits until its pass ended; at once if it was
    /// never started.
    func stop() {
        let wait = state.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .stopping
            return true
        }
        guard wait else { return }
        wake.signal()
        while !state.withLock({ $0 == .stopped }) { Thread.sleep(forTimeInterval: 0.01) }
    }
}
