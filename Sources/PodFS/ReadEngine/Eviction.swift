import Locking
import Logging
import RangeCache
import ReadRules

/// Keeps the cache under its size cap and makes room on a full disk:
/// whole episodes go, least recently read first, never one that is open,
/// downloading, kept or pinned. Each goes in the durable order: the index
/// forgets its ranges, then its scratch file is deleted, so the index
/// never claims a deleted byte.
///
/// A full disk (ENOSPC, EDQUOT) never fails a read: fetched bytes are
/// served from memory (`SpillBuffer`, `DiskSpace`) until the flush thread
/// made room here (`recoverSpace`) and lets bytes go to the disk again.
/// The index only ever lists bytes that were written, so it stays
/// consistent throughout.
///
/// Its locks: the index lock (`Durability.lock`), taken per episode evicted
/// and then that episode's state lock (the lock order of every flush);
/// `kept` is a leaf lock, and so is the reader's map of the mount's
/// episodes it asks.
final class Eviction: Sendable {
    // MARK: - Properties

    /// Episodes kept by policy (`KeepPlan.kept`): they count in the cap but
    /// are never evicted.
    let kept = Locked<Set<String>>([])
    /// The mount's episodes by key (the reader's): episodes of feeds not
    /// mounted are evicted in the index and on disk only.
    private let episodes: Locked<[String: Episode]>
    private let index: CacheIndex
    /// The index lock, and the commit a full disk's recovery makes first.
    private let durability: Durability
    private let disk: DiskSpace
    private let limit: Int64?
    private let logger: Logger

    // MARK: - Init

    init(
        index: CacheIndex, durability: Durability, episodes: Locked<[String: Episode]>, disk: DiskSpace,
        limit: Int64?, logger: Logger
    ) {
        self.index = index
        self.episodes = episodes
        self.durability = durability
        self.disk = disk
        self.limit = limit
        self.logger = logger
    }

    // MARK: - Methods

    /// Each cached episode's bytes and last read, least recently read
    /// first (`CacheIndex.usage`); `nil`, logged, when the index cannot say.
    func usage() -> [(key: String, bytes: Int64, lastRead: Int64?)]? {
        do {
            return try index.usage()
        } catch {
            logger.error("could not measure the cache", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Evicts until the committed bytes are at most 90 % of the cap (some
    /// room, so eviction does not run on every commit). Returns the number
    /// of bytes freed.
    func keepUnderCap() -> Int64 {
        // One sum over the cached ranges first: the list of every episode
        // (`usage`) is a query over every row the index has (200,000 for a
        // thousand shows), and each flush pass asked it under the index's
        // lock, which the shows being listed wait for. The sum is never
        // below the list's total, so under the cap it ends the pass.
        guard let limit, (try? index.cachedBytes()).map({ $0 > limit }) ?? true, let usage = usage() else { return 0 }
        var total = usage.reduce(Int64(0)) { $0.saturatingAdding($1.bytes) }
        guard total > limit else { return 0 }
        let target = limit / 10 * 9
        let (freed, evicted) = evict(from: usage) { bytes in
            total -= bytes
            return total > target
        }
        logger.info(
            "evicted episodes to keep the cache under its cap",
            metadata: ["episodes": "\(evicted)", "freed.bytes": "\(freed)", "cached.bytes": "\(total)", "cap.bytes": "\(limit)"])
        if total > limit {
            logger.warning(
                "the cache is over its cap: what is left is open, downloading, kept or pinned",
                metadata: ["cached.bytes": "\(total)", "cap.bytes": "\(limit)"])
        }
        return freed
    }

    /// Evicts until the cache's file system has `free` bytes free or
    /// nothing is left to evict. Returns the free bytes at the end.
    func makeRoom(until free: Int64) -> Int64 {
        var available = disk.measure()?.free ?? 0
        guard available < free, let usage = usage() else { return available }
        let (freed, evicted) = evict(from: usage) { _ in
            available = disk.measure()?.free ?? available
            return available < free
        }
        if evicted > 0 {
            logger.info(
                "evicted episodes to make room on the cache's full disk",
                metadata: ["episodes": "\(evicted)", "freed.bytes": "\(freed)", "free.bytes": "\(available)"])
        }
        return available
    }

    /// On the flush thread while the disk is full and an open file is being
    /// read from memory, or a download kept by policy waits for room (or
    /// ranges wait to be committed): gives the reserve file's space to the
    /// index, commits what is on disk, evicts least recently read episodes
    /// (never an open or kept one) until there is room, and resumes writing
    /// when there is. With no such demand, what is cached stays: nothing is
    /// evicted for room nobody needs; but room made by someone else (a file
    /// deleted, a larger volume) lets writes resume.
    func recoverSpace() {
        guard disk.isFull else { return }
        let reading = disk.takeSpillers().contains { episode in
            episode.state.withLock { !$0.handles.isEmpty }
        }
        let downloadWaits = disk.takeRoomWanted()
        let wanted = reading || downloadWaits
        let uncommitted = durability.hasUncommitted
        guard wanted || uncommitted else {
            resumeIfRoom()
            return
        }
        disk.releaseReserve()
        durability.flush()
        guard wanted else {
            resumeIfRoom()
            return
        }
        guard let measured = disk.measure() else {
            disk.leaveFull(logger: logger, free: 0)
            return
        }
        let threshold = disk.resumeThreshold(total: measured.total)
        let free = makeRoom(until: threshold + DiskSpace.reserveSize)
        // Writes resume only with the reserve back in place: the next full
        // disk must again leave room for the index to evict.
        guard free >= threshold + DiskSpace.reserveSize, disk.makeReserve(logger: logger) else { return }
        disk.leaveFull(logger: logger, free: free)
    }

    /// Lets writes resume when the disk has room without evicting: the
    /// room of a full disk's threshold and the reserve file back.
    private func resumeIfRoom() {
        guard let measured = disk.measure() else { return }
        let threshold = disk.resumeThreshold(total: measured.total)
        guard measured.free >= threshold + DiskSpace.reserveSize, disk.makeReserve(logger: logger) else { return }
        disk.leaveFull(logger: logger, free: measured.free)
    }

    /// Deletes the cached bytes of `keys` now (an unsubscribed show's, with
    /// `--purge`), kept ones too, except an episode open or downloading.
    /// Returns how many went and how many stayed for that reason.
    func purge(keys: [String]) -> (purged: Int, open: Int) {
        var purged = 0
        for key in keys where evict(key: key) { purged += 1 }
        return (purged, keys.count - purged)
    }

    // MARK: - Private methods

    /// Evicts the episodes of `usage` in its order, skipping kept ones and
    /// those that may not go now, while `more` (told each evicted
    /// episode's bytes) says to go on. Returns the bytes freed and the
    /// number of episodes evicted.
    private func evict(
        from usage: [(key: String, bytes: Int64, lastRead: Int64?)], while more: (Int64) -> Bool
    ) -> (freed: Int64, evicted: Int) {
        var freed: Int64 = 0
        var evicted = 0
        let kept = kept.withLock { $0 }
        for entry in usage where entry.bytes > 0 && !kept.contains(entry.key) {
            guard evict(key: entry.key) else { continue }
            freed += entry.bytes
            evicted += 1
            guard more(entry.bytes) else { break }
        }
        return (freed, evicted)
    }

    /// Evicts one episode unless it is open or downloading.
    private func evict(key: String) -> Bool {
        let episode = episodes.withLock { $0[key] }
        let path = index.dataPath(forKey: key)
        return durability.lock.withLock { _ -> Bool in
            // Lock order as everywhere: the index lock, then the episode's.
            func forget() -> Bool {
                do {
                    try index.dropRanges(key: key)
                } catch {
                    // On a full disk this repeats every second until there
                    // is room: the disk-full warning already said so.
                    logger.log(
                        level: error.isNoSpace ? .debug : .error, "could not evict an episode",
                        metadata: ["episode.key": "\(key)", "error": "\(error)"])
                    return false
                }
                do {
                    try ScratchFile.remove(path: path)
                } catch {
                    logger.warning(
                        "could not delete an evicted cache file", metadata: ["path": "\(path)", "error": "\(error)"])
                }
                return true
            }
            guard let episode else { return forget() }
            // Held across the index update and the unlink (see
            // `Episode.State.mayEvict`): the one place I/O runs under an
            // episode's lock, in the lock order of every flush.
            return episode.state.withLock { state in
                guard state.mayEvict, forget() else { return false }
                state.evicted()
                return true
            }
        }
    }
}
