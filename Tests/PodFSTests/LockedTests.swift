import Foundation
import Locking
import Testing

/// `Locked` is a struct around one object that holds the value and its
/// mutex: copies are the same lock, and the value outlives none of them.
@Suite struct LockedTests {
    @Test func copiesShareOneValue() {
        let first = Locked([1])
        let second = first
        second.withLock { $0.append(2) }
        #expect(first.withLock { $0 } == [1, 2])
    }

    /// Four threads each add 500 times to the value through their own
    /// copy, sleeping 20 us between reading the value and writing it
    /// back: every addition is kept only if the lock excludes the others
    /// (without it most are lost, and the thread sanitizer reports the race).
    @Test func threadsThroughCopiesExcludeEachOther() {
        let counter = Locked(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            let copy = counter
            // Threads of their own: a global queue may run the four one
            // after another, which would prove nothing.
            Thread {
                for _ in 0..<500 {
                    copy.withLock { value in
                        let read = value
                        usleep(20)
                        value = read + 1
                    }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<4 { done.wait() }
        #expect(counter.withLock { $0 } == 2_000)
    }

    /// The value is released with the last copy (a class instance in it is
    /// freed, not leaked with the mutex's allocation).
    @Test func theValueGoesWithTheLastCopy() {
        final class Token: Sendable {}
        weak var watched: Token?
        do {
            let token = Token()
            watched = token
            let lock = Locked<Token?>(token)
            let copy = lock
            _ = copy.withLock { $0 }
        }
        #expect(watched == nil)
    }
}
