import Foundation
import Logging
import RangeCache
import ReadRules

/// A full disk (ENOSPC, EDQUOT) or another failed cache write (EFBIG, EIO)
/// never fails a read: the fetched bytes are served from memory
/// (`SpillBuffer`), the failure is logged once, and the flush thread makes
/// room by evicting least recently read episodes that are not open, then
/// lets bytes go to the disk again. The index only ever lists bytes that
/// were written, so it stays consistent throughout.
extension EpisodeReader {
    /// Called when a chunk could not be written or the scratch file could
    /// not be created; logs outside the episode's lock.
    func cacheWriteFailed(_ error: FileError, episode: Episode) {
        if error.isNoSpace {
            disk.enterFull(error.description, logger: logger)
            return
        }
        let first = episode.state.withLock { $0.warnOnce(.writeFailure) }
        let metadata: Logger.Metadata = ["episode.key": "\(episode.key)", "error": "\(error)"]
        if first {
            logger.error("could not write to the cache; this episode's new bytes are served from memory", metadata: metadata)
        } else {
            logger.debug("could not write to the cache", metadata: metadata)
        }
    }

    /// On the flush thread while the disk is full and an open file is being
    /// read from memory (or ranges wait to be committed): gives the reserve
    /// file's space to the index, commits what is on disk, evicts least
    /// recently read episodes (never an open one) until there is room, and
    /// resumes writing when there is. With no such demand, what is cached
    /// stays: nothing is evicted for room nobody needs.
    func recoverSpace() {
        guard disk.isFull else { return }
        let reading = disk.takeSpillers().contains { episode in
            episode.state.withLock { !$0.handles.isEmpty }
        }
        let uncommitted = !durability.dirty.isEmpty
        guard reading || uncommitted else { return }
        disk.releaseReserve()
        flush()
        guard reading else { return }
        guard let measured = disk.measure() else {
            disk.leaveFull(logger: logger, free: 0)
            return
        }
        let threshold = disk.resumeThreshold(total: measured.total)
        let free = eviction.makeRoom(until: threshold + DiskSpace.reserveSize)
        // Writes resume only with the reserve back in place: the next full
        // disk must again leave room for the index to evict.
        guard free >= threshold + DiskSpace.reserveSize, disk.makeReserve(logger: logger) else { return }
        disk.leaveFull(logger: logger, free: free)
    }
}
