import Locking
import Logging
import RangeCache

/// What the index must hear, and the order it hears it in: the lock that
/// serialises index commits with version drops, the episodes with ranges
/// to commit, those stopped until a version change's durable steps are
/// done (`EpisodeReader+Unfinished`), the thread that flushes, and the
/// commit itself (`flush`): snapshot the ranges, `fdatasync` the scratch
/// file, then commit the snapshot. Everything in a snapshot was written
/// before it was taken, so the sync covers it; a crash loses at most one
/// interval of downloads (guarantee 1 of docs/DESIGN.md).
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
    private let index: CacheIndex
    private let logger: Logger
    /// Told of a sync or a commit that failed for lack of space.
    private let disk: DiskSpace

    init(index: CacheIndex, disk: DiskSpace, logger: Logger) {
        self.index = index
        self.disk = disk
        self.logger = logger
    }

    /// Commits every dirty episode's ranges now, in the order of
    /// `Episode.State.commitPlan`: sync first, then the index.
    func flush() {
        lock.withLock { commits in
            let episodes = dirty.takeAll()
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
                disk.enterFull(error.description, logger: logger)
            } else {
                logger.error("could not sync a cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            }
            return false
        }
    }

    /// The commit failed: every episode of it stays dirty.
    private func commitFailed(_ error: any Error, episodes: [Episode], snapshots: [Episode.State.CommitSnapshot]) {
        if let error = error as? IndexError, error.isNoSpace {
            disk.enterFull(error.description, logger: logger)
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
        dirty.mark(episode)
    }
}
