import Foundation
import Logging
import RangeCache
import Locking

/// The flush thread's pass and the reader's stop: what the index must hear
/// is `Durability`'s (the commit in the order that keeps guarantee 1);
/// each pass also makes room on a full disk, retries unfinished steps and
/// keeps the cache under its cap.
extension EpisodeReader {
    /// Starts committing dirty episodes every `interval` seconds (with
    /// `Tuning.commitEveryChunk` the network thread commits; this thread
    /// then only evicts, every second). Creates the reserve file that lets
    /// the index evict on a full disk.
    public func startFlushing(interval: Double = 1.0) {
        durability.flusher.start(interval: interval, prepare: { disk.makeReserve(logger: logger) }) { [self] in
            eviction.recoverSpace()
            durability.retryUnfinishedSteps()
            flush()
            evictIfOverLimit()
        }
    }

    /// Stops the flush thread and commits what is left. Call after the
    /// HTTP client is shut down: queued writes land first.
    public func stopFlushing() {
        drainWriters()
        durability.flusher.stop()
        durability.retryUnfinishedSteps()
        // The last try: no timer tries after the reader stopped.
        durability.stopped.close()
        flush()
    }

    /// Commits every dirty episode's ranges now (`Durability.flush`).
    public func flush() {
        durability.flush()
    }
}
