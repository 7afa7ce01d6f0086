import Dispatch
import Locking
import Logging
import RangeCache
import ReadRules

/// What the index must hear, and the order it hears it in: the lock that
/// serialises index commits with version drops, the episodes with ranges
/// to commit, the thread that flushes, and the commit itself (`flush`):
/// snapshot the ranges, `fdatasync` the scratch file, then commit the
/// snapshot. Everything in a snapshot was written before it was taken, so
/// the sync covers it; a crash loses at most one interval of downloads
/// (guarantee 1 of docs/DESIGN.md).
///
/// A version change's durable steps are carried out here too
/// (`carryOut(_:of:)`), in their order, stopping at the first failure; an
/// episode whose steps failed is stopped (its readers get EIO) and its
/// steps are tried again, under the index lock, until the index and the
/// scratch file took the change (docs/DESIGN.md, "A durable step that
/// fails"): by a timer (`StoppedEpisodes`: after 1 s, then twice as long
/// each time, at most 30 s) and at each flush pass.
///
/// Lock order: `lock`, then an episode's state; the others are leaves.
final class Durability: Sendable {
    // MARK: - Properties

    /// Serialises index commits with version drops. Holds the number of
    /// commits made (debug log); a zero-size value would also trip TSan's
    /// exclusivity checks.
    let lock = Locked<Int>(0)
    /// Episodes whose `present` changed since the last commit.
    private let dirty = DirtyEpisodes()
    /// Episodes stopped until a version change's durable steps are done.
    private let stopped = StoppedEpisodes()
    /// The flush thread (`startFlushing`).
    private let flusher = FlushThread()
    private let index: CacheIndex
    private let logger: Logger
    /// Told of a sync or a commit that failed for lack of space.
    private let disk: DiskSpace

    /// Whether an episode has ranges or a validator the index has not
    /// heard of.
    var hasUncommitted: Bool { !dirty.isEmpty }

    // MARK: - Init

    init(index: CacheIndex, disk: DiskSpace, logger: Logger) {
        self.index = index
        self.disk = disk
        self.logger = logger
    }

    // MARK: - The flush thread and the commit

    /// Starts committing dirty episodes every `interval` seconds (with
    /// `Tuning.commitEveryChunk` the network thread commits; this thread
    /// then only evicts, every second). Creates the reserve file that lets
    /// the index evict on a full disk. Each pass makes room on a full disk
    /// (`Eviction.recoverSpace`), tries unfinished steps again, commits,
    /// and keeps the cache under its cap (`Eviction.keepUnderCap`).
    func startFlushing(interval: Double, eviction: Eviction, also: @escaping @Sendable () -> Void) {
        flusher.start(interval: interval, prepare: { disk.makeReserve(logger: logger) }) { [self] in
            also()
            eviction.recoverSpace()
            retryUnfinishedSteps()
            flush()
            _ = eviction.keepUnderCap()
        }
    }

    /// Stops the flush thread, tries unfinished steps a last time and
    /// commits what is left. The caller drained the writers first
    /// (`EpisodeReader.stopFlushing`): queued writes land before.
    func stopFlushing() {
        flusher.stop()
        retryUnfinishedSteps()
        // The last try: no timer tries after the reader stopped.
        stopped.close()
        flush()
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

    /// Queues an episode for the next commit.
    func markDirty(_ episode: Episode) {
        dirty.mark(episode)
    }

    // MARK: - A version change's durable steps

    /// Carries out a version change's durable steps (the index, the
    /// scratch file) in their order, under the index lock the caller holds.
    /// Returns the steps not done: the one that failed (logged) and those
    /// after it, none when all were done. The caller then stops the episode
    /// (`EpisodeReader.stop(_:unfinished:then:fetch:)`, `retryLater`):
    /// bytes the index may still list are never freed, and no byte of the
    /// new version comes before the index forgot the old one's.
    func carryOut(_ steps: [Episode.State.Effect], of episode: Episode) -> [Episode.State.Effect] {
        for (position, step) in steps.enumerated() {
            do {
                try carryOut(step: step, of: episode)
            } catch {
                logger.error(
                    "could not record a change of an episode's version in the cache",
                    metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
                return Array(steps[position...])
            }
        }
        return []
    }

    /// Carries out one durable step (`Effect.dropIndexRanges`, `.reshape`,
    /// `.replace`, `.saveVersion`); the reader's interpreter hands them here.
    func carryOut(step: Episode.State.Effect, of episode: Episode) throws {
        switch step {
        case .dropIndexRanges:
            try index.dropRanges(key: episode.key)
        case .reshape(let scratch, let old, let new):
            // Still on the network thread, before any byte of the new
            // version is written.
            try Self.reshape(scratch.file, old: old, new: new)
        case .replace(let old, let length):
            replace(old.file, length: length, of: episode)
        case .saveVersion(let version, let pinnedURL, let pinnedIssuer):
            try index.setValidator(EpisodeValidator(
                key: episode.key, length: version.length ?? 0, etag: version.etag,
                lastModified: version.lastModified, pinnedURL: pinnedURL, pinnedIssuer: pinnedIssuer))
        default:
            assertionFailure("\(step) is no durable step")
        }
    }

    /// `episode` was stopped by durable steps that failed: they are tried
    /// again at the next flush pass, and by a timer if none is set.
    func retryLater(_ episode: Episode) {
        stopped.mark(episode)
        setStepRetryTimer()
    }

    // MARK: - Private methods

    /// Tries again the unfinished steps of every stopped episode (the flush
    /// pass, the timer). An episode whose steps are done reads again; one
    /// whose steps fail again stays stopped.
    private func retryUnfinishedSteps() {
        for episode in stopped.takeAll() {
            let unfinished = lock.withLock { _ in
                carryOut(episode.state.withLock(\.stepsDue), of: episode)
            }
            if unfinished.isEmpty {
                episode.state.withLock { $0.stepsDone() }
                logger.notice(
                    "the cache took the episode's new version; it reads again",
                    metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
            } else {
                _ = episode.state.withLock { $0.stepsFailed(unfinished, then: []) }
                stopped.mark(episode)
            }
        }
        stopped.allDone()
        setStepRetryTimer()
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

    /// Sets the timer of the next try, if one is due and none is set.
    private func setStepRetryTimer() {
        guard let delay = stopped.timerToSet() else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, stopped.timerFired() else { return }
            retryUnfinishedSteps()
        }
    }

    /// The old file stays open for the files that read it; a new one takes
    /// its path (`Effect.replace`). Should making it fail, the new
    /// version's file is made when a byte arrives.
    private func replace(_ old: ScratchFile, length: Int64, of episode: Episode) {
        do {
            try ScratchFile.remove(path: old.path)
            let fresh = try? ScratchFile(path: old.path, length: length)
            episode.state.withLock { $0.replaced(with: fresh.map(Episode.FileToken.init)) }
        } catch {
            // Still at its path, it cannot be kept apart from the new
            // version: freed as when no file is open.
            logger.warning(
                "could not set a replaced version's cache file aside; files open on it read EIO",
                metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            let size = episode.state.withLock { $0.keptInPlace(Episode.FileToken(old)) }
            // The index forgot the old bytes: left on disk, they are only
            // space, never read.
            do {
                try Self.reshape(old, old: size, new: length)
            } catch {
                logger.warning(
                    "could not free a replaced version's bytes in its cache file",
                    metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            }
        }
    }

    /// Frees the `old` bytes of a version in `scratch` and gives it the
    /// `new` length (`Effect.reshape`).
    private static func reshape(_ scratch: ScratchFile, old: Int64, new: Int64) throws {
        if old > 0 { try scratch.punchHole(0..<old) }
        if old != new { try scratch.resize(to: new) }
    }
}
