import Locking

/// What the index must hear, and the order it hears it in: the lock that
/// serialises index commits with version drops, the episodes with ranges
/// to commit, those stopped until a version change's durable steps are
/// done, and the thread that flushes them (`EpisodeReader+Durability`,
/// `EpisodeReader+Unfinished`).
///
/// Lock order: `lock`, then an episode's state; the others are leaves.
final class Durability: Sendable {
    /// Serialises index commits with version drops. Holds the number of
    /// commits made (debug log); a zero-size value would also trip TSan's
    /// exclusivity checks.
    let lock = Locked<Int>(0)
    /// Episodes whose `present` changed since the last commit.
    let dirty = DirtyEpisodes()
    /// Episodes stopped until a version change's durable steps are done.
    let stopped = StoppedEpisodes()
    /// The flush thread (`EpisodeReader.startFlushing`).
    let flusher = FlushThread()
}
