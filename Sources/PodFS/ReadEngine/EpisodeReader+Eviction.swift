import Foundation
import RangeCache

/// Keeps the cache under its size cap: least recently read episodes go
/// first, never one that is open or downloading. Whole episodes are
/// evicted, in the durable order: the index forgets the ranges, then the
/// scratch file is deleted, so the index never claims a deleted byte.
extension EpisodeReader {
    /// Each cached episode's bytes and last read, least recently read
    /// first (`CacheIndex.usage`); `nil`, logged, when the index cannot say.
    func cachedUsage() -> [(key: String, bytes: Int64, lastRead: Int64?)]? {
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
    @discardableResult
    public func evictIfOverLimit() -> Int64 {
        guard let limit = tuning.cacheLimit else { return 0 }
        guard let usage = cachedUsage() else { return 0 }
        var total = usage.reduce(Int64(0)) { $0.saturatingAdding($1.bytes) }
        guard total > limit else { return 0 }
        let target = limit / 10 * 9
        var freed: Int64 = 0
        var evicted = 0
        // Kept and pinned episodes count in the cap, but are never evicted
        // (docs/DESIGN.md, "Offline by policy").
        let kept = keptKeys.withLock { $0 }
        for entry in usage where entry.bytes > 0 && !kept.contains(entry.key) {
            guard total > target else { break }
            if evict(key: entry.key) {
                total -= entry.bytes
                freed += entry.bytes
                evicted += 1
            }
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

    /// Evicts least recently read episodes (never an open or downloading
    /// one) until the cache's file system has `free` bytes free or nothing
    /// is left to evict. Returns the free bytes at the end.
    func evictForSpace(until free: Int64) -> Int64 {
        var available = disk.measure()?.free ?? 0
        guard available < free else { return available }
        guard let usage = cachedUsage() else { return available }
        var freed: Int64 = 0
        var evicted = 0
        let kept = keptKeys.withLock { $0 }
        for entry in usage where entry.bytes > 0 && !kept.contains(entry.key) {
            guard available < free else { break }
            if evict(key: entry.key) {
                freed += entry.bytes
                evicted += 1
                available = disk.measure()?.free ?? available
            }
        }
        if evicted > 0 {
            logger.info(
                "evicted episodes to make room on the cache's full disk",
                metadata: ["episodes": "\(evicted)", "freed.bytes": "\(freed)", "free.bytes": "\(available)"])
        }
        return available
    }

    /// Evicts one episode unless it is open or downloading.
    private func evict(key: String) -> Bool {
        let episode = episodesByKey.withLock { $0[key] }
        let path = index.dataPath(forKey: key)
        return indexLock.withLock { _ -> Bool in
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
