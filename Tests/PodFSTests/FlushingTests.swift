import Foundation
import Locking
import Testing

@testable import PodFS
@testable import ReadRules

/// The flush's parts (`ReadEngine/Flushing.swift`): the episodes with
/// something to commit, and the thread that commits them.
@Suite struct FlushingTests {
    private func episode(_ number: UInt64) -> Episode {
        Episode(
            inode: number, parent: 1, key: "k\(number)", url: "http://o/\(number).mp3", guid: nil,
            name: "\(number).mp3", modificationTime: 0, feedLength: nil, record: nil)
    }

    @Test func anEpisodeMarkedTwiceIsCommittedOnceAndTakenOnce() {
        let dirty = DirtyEpisodes()
        let (one, two) = (episode(1), episode(2))
        dirty.mark(one)
        dirty.mark(two)
        dirty.mark(one)
        #expect(!dirty.isEmpty)
        #expect(Set(dirty.takeAll().map(\.key)) == ["k1", "k2"])
        #expect(dirty.isEmpty && dirty.takeAll().isEmpty)
    }

    @Test func theThreadPreparesOnceRunsItsPassAndStopsForGood() {
        let thread = FlushThread()
        let passes = Locked(0)
        var prepared = 0
        thread.start(interval: 0.01, prepare: { prepared += 1 }) { passes.withLock { $0 += 1 } }
        thread.start(interval: 0.01, prepare: { prepared += 1 }) { passes.withLock { $0 += 100 } }
        #expect(prepared == 1, "a second start does nothing")
        let deadline = Date().addingTimeInterval(10)
        while passes.withLock({ $0 }) < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        thread.stop()
        let done = passes.withLock { $0 }
        #expect(done >= 3 && done < 100)
        // stop() returned once the thread ended: no pass can follow.
        #expect(passes.withLock { $0 } == done, "no pass after stop() returned")
        thread.stop()
    }

    @Test func aLongIntervalDoesNotHoldTheStop() {
        let thread = FlushThread()
        let passes = Locked(0)
        thread.start(interval: 3600, prepare: {}) { passes.withLock { $0 += 1 } }
        let stopped = DispatchSemaphore(value: 0)
        Thread { thread.stop(); stopped.signal() }.start()
        // An unmount must not wait out commit_interval (up to an hour).
        #expect(stopped.wait(timeout: .now() + 30) == .success, "stop() waited for the interval")
        #expect(passes.withLock { $0 } == 0, "stopping runs no pass: the caller commits what is left")
    }
}
