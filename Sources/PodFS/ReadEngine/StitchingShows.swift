import Locking
import Logging
import RangeCache
import ReadRules

/// The marks of episodes whose origin serves different bytes per request
/// (docs/DESIGN.md, "Episodes and their variants"), and the shows with an
/// episode marked so by its own responses, in this mount or an earlier
/// one: a new episode of such a show takes the mark before its first byte.
/// A mark the rules decided on goes to the index and is said once in the
/// log (`markUnstable`, `inherit`, `record`). The index's marks are read
/// once per mount (`load`, in the background when the mount is served, or
/// by the first open that asks before that); this mount's shows are added
/// as their marks are made.
///
/// Its lock (`known`) is a leaf: the index is read and written outside it,
/// and no episode's lock is held with it.
final class StitchingShows: Sendable {
    // MARK: - Nested types

    private struct Known {
        /// Whether the index's marks were read.
        var loaded = false
        var shows: Set<UInt64> = []
    }

    // MARK: - Private properties

    private let index: CacheIndex
    private let logger: Logger
    private let known = Locked(Known())

    // MARK: - Init

    init(index: CacheIndex, logger: Logger) {
        self.index = index
        self.logger = logger
    }

    // MARK: - Methods

    /// Whether the show with inode `show` stitches, reading the index
    /// first if it was not read yet.
    func contains(_ show: UInt64) -> Bool {
        let shows = known.withLock { $0.loaded ? $0.shows : nil } ?? load()
        return shows.contains(show)
    }

    /// An episode of `show` was marked in this mount.
    func insert(_ show: UInt64) {
        _ = known.withLock { $0.shows.insert(show) }
    }

    /// `episode`'s origin serves different bytes per request
    /// (`Effect.markUnstable`): its show stitches from now on, the mark
    /// goes to the index (a failure is logged; the mark is a hint, the
    /// bytes stay one variant either way), and the log says so.
    func markUnstable(_ episode: Episode, reason: StitchReason) {
        insert(episode.parent)
        let names: Logger.Metadata = ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"]
        if reason == Episode.State.noValidator {
            logger.notice(
                """
                the origin sends no validator that proves a version (no strong ETag, no Last-Modified at least a \
                minute old), so nothing shows two of its responses are one variant: the episode is downloaded \
                whole from its start in one response
                """,
                metadata: names)
        } else {
            logger.notice(
                "the origin serves different bytes per request (it stitches ads per request); podfs keeps one variant",
                metadata: names.merging(["reason": "\(reason)"]) { first, _ in first })
        }
        record(episode, reason: reason)
    }

    /// `episode` took its show's mark before its first byte
    /// (`Episode.State.inheritStitching`): the mark goes to the index.
    func inherit(_ episode: Episode, reason: StitchReason) {
        logger.info(
            "another episode of this show is stitched per request: this one is streamed whole from its first byte",
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
        record(episode, reason: reason)
    }

    /// `episode`'s mark goes to the index; a failure is logged.
    func record(_ episode: Episode, reason: StitchReason) {
        do {
            try index.markUnstable(key: episode.key, reason: reason.code)
        } catch {
            logger.warning("could not record an unstable origin in the cache index", metadata: ["error": "\(error)"])
        }
    }

    /// Reads the index's marks unless they were read, outside the lock.
    func loadIfNeeded() {
        if !known.withLock(\.loaded) { load() }
    }

    // MARK: - Private methods

    /// Reads the shows with an episode marked by its own responses from
    /// the index (inherited marks do not count: a show whose only own mark
    /// was cleared stitches no more), adds them to this mount's, and
    /// returns them all (this mount's only when the index cannot be read:
    /// it is asked again next time).
    @discardableResult
    private func load() -> Set<UInt64> {
        let feeds = index.feedsWithUnstableEpisodes(notCounting: Episode.State.showStitches.code)
        return known.withLock { known in
            guard let feeds else { return known.shows }
            known.shows.formUnion(feeds.map { Catalog.inode(.show, id: $0) })
            known.loaded = true
            return known.shows
        }
    }
}
