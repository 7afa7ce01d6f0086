import Foundation
import Logging
import Locking
import RangeCache
import ReadRules
import Synchronization

/// Whether the cache's file system is full, and the small reserve file that
/// lets the index be updated (to evict) even then.
///
/// While full, fetched bytes are not written (they go to the episodes'
/// spill buffers in memory) until the flush thread made room. The state
/// change is logged once, not once per chunk: a warning the first time, and
/// again only after `warningInterval` seconds.
final class DiskSpace: Sendable {
    // MARK: - Nested types

    /// Guarded by `log`.
    private struct LogState {
        /// When the last warning was logged (`monotonicSeconds()`).
        var warnedAt: Double?
        /// Whether the current full period was announced at warning level.
        var announced = false
        /// Chunks kept in memory during the current full period.
        var spilledBytes: Int64 = 0
        /// Episodes whose fetched bytes went to memory since the flush
        /// thread last looked: the demand for room.
        var spillers: [ObjectIdentifier: Episode] = [:]
    }

    // MARK: - Properties

    /// The cache directory (its file system is the one measured).
    let directory: String
    var reservePath: String { directory + "/reserve" }
    /// Enough for SQLite to commit an eviction on an otherwise full disk.
    static let reserveSize: Int64 = 512 * 1024
    /// A repeated full disk is logged at warning level at most this often.
    static let warningInterval: Double = 600

    private let full = Atomic<Bool>(false)
    /// A download kept by policy waits for room (`wantRoom`).
    private let roomWanted = Atomic<Bool>(false)
    private let log = Locked(LogState())

    // MARK: - Init

    init(directory: String) {
        self.directory = directory
    }

    // MARK: - Methods

    /// Whether fetched bytes should skip the disk for now.
    var isFull: Bool { full.load(ordering: .acquiring) }

    /// Notes that the disk is full; logs it the first time (and again only
    /// after `warningInterval`).
    func enterFull(_ cause: String, logger: Logger) {
        let wasFull = full.exchange(true, ordering: .acquiringAndReleasing)
        guard !wasFull else { return }
        let warn = log.withLock { state -> Bool in
            let now = monotonicSeconds()
            state.spilledBytes = 0
            guard state.warnedAt.map({ now - $0 >= Self.warningInterval }) ?? true else {
                state.announced = false
                return false
            }
            state.warnedAt = now
            state.announced = true
            return true
        }
        let message: Logger.Message =
            "the cache's disk is full: reads are served from memory, least recently read episodes are evicted"
        let metadata: Logger.Metadata = ["cause": "\(cause)", "cache": "\(directory)"]
        if warn {
            logger.warning(message, metadata: metadata)
        } else {
            logger.debug(message, metadata: metadata)
        }
    }

    /// A chunk of `episode` could not be written or its scratch file could
    /// not be created: no room is a full disk (`enterFull`); another
    /// failure (EFBIG, EIO) is logged once per episode, whose new bytes are
    /// served from memory. Outside the episode's lock.
    func writeFailed(_ error: FileError, episode: Episode, logger: Logger) {
        if error.isNoSpace {
            enterFull(error.description, logger: logger)
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

    /// Counts bytes of `episode` served from memory instead of the disk.
    func noteSpilled(_ count: Int, episode: Episode) {
        log.withLock { state in
            state.spilledBytes += Int64(count)
            state.spillers[ObjectIdentifier(episode)] = episode
        }
    }

    /// A download of an episode kept by policy waits for room, rather
    /// than fetch bytes the disk cannot take: the next flush pass makes
    /// room as for a reader (`Eviction.recoverSpace`).
    func wantRoom() {
        roomWanted.store(true, ordering: .releasing)
    }

    /// Whether a download wanted room since the last call.
    func takeRoomWanted() -> Bool {
        roomWanted.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// The episodes that spilled bytes to memory since the last call.
    func takeSpillers() -> [Episode] {
        log.withLock { state in
            defer { state.spillers.removeAll() }
            return Array(state.spillers.values)
        }
    }

    /// Lets fetched bytes go to the disk again.
    func leaveFull(logger: Logger, free: Int64) {
        guard full.exchange(false, ordering: .acquiringAndReleasing) else { return }
        // A wish for room from this full period is met.
        roomWanted.store(false, ordering: .releasing)
        let (announced, spilled) = log.withLock { ($0.announced, $0.spilledBytes) }
        let metadata: Logger.Metadata = ["free.bytes": "\(free)", "memory.bytes": "\(spilled)"]
        if announced {
            logger.notice("the cache's disk has room again; fetched bytes are cached again", metadata: metadata)
        } else {
            logger.debug("the cache's disk has room again", metadata: metadata)
        }
    }

    /// Bytes this process may still write on the cache's file system, and
    /// its size; `nil` when it cannot be measured.
    func measure() -> (free: Int64, total: Int64)? {
        VolumeSpace(of: directory).map { ($0.free, $0.total) }
    }

    /// Free space below which the disk stays "full" after making room:
    /// a sixteenth of the file system, at most 16 MiB.
    func resumeThreshold(total: Int64) -> Int64 {
        min(16 * 1024 * 1024, max(Self.reserveSize, total / 16))
    }

    /// Creates the reserve file if it is missing; returns whether it is
    /// there.
    @discardableResult
    func makeReserve(logger: Logger) -> Bool {
        guard !ScratchFile.exists(path: reservePath) else { return true }
        do {
            let file = try ScratchFile(path: reservePath, length: Self.reserveSize)
            try file.allocate(0..<Self.reserveSize)
            return true
        } catch {
            try? ScratchFile.remove(path: reservePath)
            logger.debug("could not create the cache's reserve file", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Deletes the reserve file, giving its space to the index.
    func releaseReserve() {
        try? ScratchFile.remove(path: reservePath)
    }
}
