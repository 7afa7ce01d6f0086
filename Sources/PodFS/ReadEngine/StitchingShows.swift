import Locking
import RangeCache

/// The shows with an episode marked stitched per request by its own
/// responses, in this mount or an earlier one (docs/DESIGN.md, "Episodes
/// and their variants"): a new episode of such a show takes the mark
/// before its first byte. The index is read once per mount (`load`, in the
/// background when the mount is served, or by the first open that asks
/// before that); this mount's marks are added as they are made.
///
/// Its lock (`known`) is a leaf: the index is read outside it, and no
/// episode's lock is held with it.
final class StitchingShows: Sendable {
    // MARK: - Nested types

    private struct Known {
        /// Whether the index's marks were read.
        var loaded = false
        var shows: Set<UInt64> = []
    }

    // MARK: - Private properties

    private let index: CacheIndex
    private let known = Locked(Known())

    // MARK: - Init

    init(index: CacheIndex) {
        self.index = index
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
