import Dispatch
import Foundation
import Locking

/// Moves an episode's bytes between memory and its scratch file off the
/// network thread: the serial queues that write fetched bytes (one per
/// episode, always the same, so its writes keep their order), the memory
/// they and the reads use, and the count of work still queued, so a
/// shutdown can wait for all of it (`drain`). Its locks are leaves.
final class ScratchIO: Sendable {
    // MARK: - Properties

    /// Body bytes queued for the writers, at most 4 MiB.
    let writeBudget = ByteBudget(limit: 4 * 1024 * 1024)
    /// Memory for body chunks: 512 KiB each, big enough that a `pwrite` and
    /// the bookkeeping around it are rare, small enough to keep memory flat
    /// (the budget above holds at most 8 of them, plus one gathering per
    /// transfer; 8 spare ones are kept).
    let chunkPool = BufferPool(capacity: 512 * 1024, limit: 8)
    /// Memory for answering reads from the disk: the kernel asks for at most
    /// 1 MiB at a time.
    let readBuffers = BufferPool(capacity: 1024 * 1024, limit: 8)
    /// Serial queues that write fetched bytes to scratch files. Writing off
    /// the network thread lets one core receive while another writes.
    private let writers: [DispatchQueue] = (0..<4).map { DispatchQueue(label: "podfs.writer.\($0)") }
    /// Retries (and rechecks) waiting for their delay to pass.
    private let pendingRetries = Locked(0)
    /// Fetch completions queued for the writers and not yet run: one may
    /// make reads again that start (and, after shutdown, fail) new fetches,
    /// whose completions queue behind the writers' `sync`.
    private let pendingCompletions = Locked(0)

    // MARK: - Methods

    /// Starts the writers' threads now and maps the first body chunks, so
    /// the first download of a mount waits for neither (a fresh 512 KiB
    /// mapping costs 128 page faults where its bytes arrive).
    func warmUp() {
        for writer in writers { writer.async {} }
        chunkPool.prefill(2)
    }

    /// The serial queue that writes `episode`'s bytes and ends its fetches.
    func writer(for episode: Episode) -> DispatchQueue {
        writers[Int(episode.inode % UInt64(writers.count))]
    }

    /// Queues a fetch's completion on `episode`'s writer, counted until it
    /// has run.
    func complete(on episode: Episode, _ work: @escaping @Sendable () -> Void) {
        pendingCompletions.withLock { $0 += 1 }
        writer(for: episode).async { [self] in
            defer { pendingCompletions.withLock { $0 -= 1 } }
            work()
        }
    }

    /// Runs `work` after `delay` seconds, counted as a retry until it has
    /// run, so `drain` waits for it.
    func afterDelay(_ delay: Double, _ work: @escaping @Sendable () -> Void) {
        pendingRetries.withLock { $0 += 1 }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
            defer { pendingRetries.withLock { $0 -= 1 } }
            work()
        }
    }

    /// Waits until every queued write and completion has run, and every
    /// retry that was waiting has started (and, once the HTTP client is
    /// shut down, failed): after this, nothing answers a kernel request
    /// unless a new one arrives.
    func drain() {
        repeat {
            while pendingRetries.withLock({ $0 }) > 0 { Thread.sleep(forTimeInterval: 0.01) }
            for writer in writers { writer.sync {} }
        } while pendingRetries.withLock({ $0 }) > 0 || pendingCompletions.withLock({ $0 }) > 0
    }
}
