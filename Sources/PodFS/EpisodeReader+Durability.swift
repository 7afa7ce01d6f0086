import Foundation
import Logging
import RangeCache
import Locking

/// The flush thread's lifecycle.
enum FlushThreadState {
    case idle
    case running
    case stopping
    case stopped
}

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
        let start = flusher.withLock { state -> Bool in
            guard state == .idle else { return false }
            state = .running
            return true
        }
        guard start else { return }
        disk.makeReserve(logger: logger)
        let tick = interval > 0 ? interval : 1
        let thread = Thread { [self] in
            blockSignalsForHelperThread()
            while flusher.withLock({ $0 == .running }) {
                Thread.sleep(forTimeInterval: tick)
                recoverSpace()
                flush()
                evictIfOverLimit()
            }
            flusher.withLock { $0 = .stopped }
        }
        thread.name = "podfs-flush"
        thread.start()
    }

    /// Stops the flush thread and commits what is left. Call after the
    /// HTTP client is shut down: queued writes land first.
    public func stopFlushing() {
        drainWriters()
        let wait = flusher.withLock { state -> Bool in
            guard state == .running else { return false }
            state = .stopping
            return true
        }
        if wait {
            while !flusher.withLock({ $0 == .stopped }) { Thread.sleep(forTimeInterval: 0.01) }
        }
        flush()
    }

    /// Commits every dirty episode's ranges now (sync first, then index).
    public func flush() {
        indexLock.withLock { commits in
            let episodes = dirtyEpisodes.withLock { dirty in
                defer { dirty.removeAll() }
                return Array(dirty.values)
            }
            guard !episodes.isEmpty else { return }
            var batch: [(key: String, ranges: [Range<Int64>])] = []
            var validators: [EpisodeValidator] = []
            var touched: [(String, Int64)] = []
            for episode in episodes {
                let snapshot: (RangeSet?, EpisodeValidator?, ScratchFile?, Int64) = episode.state.withLock { state in
                    var validator: EpisodeValidator?
                    if state.validatorDirty, let length = state.length {
                        validator = EpisodeValidator(
                            key: episode.key, length: length, etag: state.etag, lastModified: state.lastModified)
                    }
                    state.validatorDirty = false
                    defer { state.dirty = false }
                    return (state.dirty ? state.present : nil, validator, state.scratch, state.lastRead)
                }
                let (present, validator, scratch, lastRead) = snapshot
                if let validator { validators.append(validator) }
                guard let present, let scratch else { continue }
                do {
                    try scratch.synchronize()
                    batch.append((key: episode.key, ranges: present.ranges))
                    // Fetched but not read in this mount (a check, a probe):
                    // the time it was last read stays as it was.
                    if lastRead > 0 { touched.append((episode.key, lastRead)) }
                } catch {
                    // Not durable: keep it dirty so the next flush tries again.
                    episode.state.withLock { $0.dirty = true }
                    markDirty(episode)
                    if let error = error as? FileError, error.isNoSpace {
                        indexOutOfSpace(error.description)
                    } else {
                        logger.error("could not sync a cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
                    }
                }
            }
            do {
                try index.commitRanges(batch, validators: validators)
                commits += 1
                logger.debug("committed cached ranges", metadata: ["commit": "\(commits)", "episodes": "\(batch.count)"])
                for (key, at) in touched { index.touch(key: key, at: at) }
            } catch {
                if let error = error as? IndexError, error.isNoSpace {
                    indexOutOfSpace(error.description)
                } else {
                    logger.error("could not commit the cache index", metadata: ["error": "\(error)"])
                }
                for episode in episodes { markDirty(episode) }
                for episode in episodes {
                    episode.state.withLock { state in
                        state.dirty = true
                        if validators.contains(where: { $0.key == episode.key }) { state.validatorDirty = true }
                    }
                }
            }
        }
    }

    /// Queues an episode for the next commit.
    func markDirty(_ episode: Episode) {
        dirtyEpisodes.withLock { $0[ObjectIdentifier(episode)] = episode }
    }
}

/// Keeps termination signals for the FUSE loop's thread.
func blockSignalsForHelperThread() {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
    pthread_sigmask(SIG_BLOCK, &set, nil)
}
