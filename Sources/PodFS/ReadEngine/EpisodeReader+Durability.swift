import Foundation
import Logging
import RangeCache
import Locking

/// Commits present ranges to the index in the order that keeps guarantee 1:
/// snapshot the ranges, `fdatasync` the scratch file, then commit the
/// snapshot. Everything in a snapshot was written before it was taken, so
/// the sync covers it; a crash loses at most one interval of downloads.
extension EpisodeReader {
    /// Starts committing dirty episodes every `interval` seconds (with
    /// `Tuning.commitEveryChunk` the network thread commits; this thread
    /// then only evicts, every second). Creates the reserve file that lets
    /// the index evict on a full disk.
    public func startFlushing(interval: Double = 1.0) {
        durability.flusher.start(interval: interval, prepare: { disk.makeReserve(logger: logger) }) { [self] in
            recoverSpace()
            retryUnfinishedSteps()
            flush()
            evictIfOverLimit()
        }
    }

    /// Stops the flush thread and commits what is left. Call after the
    /// HTTP client is shut down: queued writes land first.
    public func stopFlushing() {
        drainWriters()
        durability.flusher.stop()
        retryUnfinishedSteps()
        // The last try: no timer tries after the reader stopped.
        durability.stopped.close()
        flush()
    }

    /// Commits every dirty episode's ranges now, in the order of
    /// `Episode.State.commitPlan`: sync first, then the index.
    public func flush() {
        durability.lock.withLock { commits in
            let episodes = durability.dirty.takeAll()
            guard !episodes.isEmpty else { return }
            let snapshots = episodes.map { episode in
                episode.state.withLock { $0.takeCommitSnapshot(key: episode.key) }
            }
            var synced = Set<Int>()
            for step in Episode.State.commitPlan(snapshots) {
                switch step {
                case .sync(let index):
                    if sync(snapshots[index], of: episodes[index]) { synced.insert(index) }
                case .commit:
                    let batch = synced.sorted().map { (key: snapshots[$0].key, ranges: snapshots[$0].ranges ?? []) }
                    do {
                        try index.commitRanges(batch, validators: snapshots.compactMap(\.validator))
                        commits += 1
                        logger.debug("committed cached ranges", metadata: ["commit": "\(commits)", "episodes": "\(batch.count)"])
                    } catch {
                        commitFailed(error, episodes: episodes, snapshots: snapshots)
                        return
                    }
                case .touch(let index):
                    if synced.contains(index) { self.index.touch(key: snapshots[index].key, at: snapshots[index].lastRead) }
                }
            }
        }
    }

    /// Syncs a snapshot's scratch file; a failure keeps the episode dirty,
    /// so the next flush tries again.
    private func sync(_ snapshot: Episode.State.CommitSnapshot, of episode: Episode) -> Bool {
        do {
            try snapshot.scratch?.file.synchronize()
            return true
        } catch {
            episode.state.withLock { $0.commitFailed(validatorIncluded: false) }
            markDirty(episode)
            if error.isNoSpace {
                indexOutOfSpace(error.description)
            } else {
                logger.error("could not sync a cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            }
            return false
        }
    }

    /// The commit failed: every episode of it stays dirty.
    private func commitFailed(_ error: any Error, episodes: [Episode], snapshots: [Episode.State.CommitSnapshot]) {
        if let error = error as? IndexError, error.isNoSpace {
            indexOutOfSpace(error.description)
        } else {
            logger.error("could not commit the cache index", metadata: ["error": "\(error)"])
        }
        for (episode, snapshot) in zip(episodes, snapshots) {
            markDirty(episode)
            episode.state.withLock { $0.commitFailed(validatorIncluded: snapshot.validator != nil) }
        }
    }

    /// Queues an episode for the next commit.
    func markDirty(_ episode: Episode) {
        durability.dirty.mark(episode)
    }
}
