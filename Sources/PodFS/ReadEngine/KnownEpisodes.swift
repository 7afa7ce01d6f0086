import Locking
import Logging
import RangeCache

/// What the reader knows of the mount's episodes and shows: the episodes
/// it met, by key, and the shows whose episodes stitch per request.
///
/// It met an episode adopted with a state (bytes cached, a version known)
/// and every one opened or fetched since (`meet`). An episode never opened
/// with nothing cached has nothing to evict or check, so a thousand shows'
/// files are not mapped twice (the catalogue has them all). An episode
/// with bytes in the index or an open file is always here, which
/// eviction's "not here: not mounted" rule rests on (`Eviction`).
final class KnownEpisodes: Sendable {
    /// The episodes met, by key (a leaf lock, shared with `Eviction`).
    let byKey = Locked<[String: Episode]>([:])
    /// The shows (by their folders' inodes) with an episode marked
    /// unstable by its own responses, and the marks made.
    let stitchingShows: StitchingShows

    init(index: CacheIndex, logger: Logger) {
        stitchingShows = StitchingShows(index: index, logger: logger)
    }

    /// Notes an episode the reader opens or fetches: the newest object of
    /// a key wins, as a refresh's does in `adopt`.
    func meet(_ episode: Episode) {
        byKey.withLock { known in
            if known[episode.key] !== episode { known[episode.key] = episode }
        }
    }

    /// Notes episodes restored with a state from the index.
    func meet(_ episodes: [Episode]) {
        byKey.withLock { known in
            for episode in episodes { known[episode.key] = episode }
        }
    }

    /// The episodes met of `keys`, in their order.
    func episodes(_ keys: [String]) -> [Episode] {
        byKey.withLock { known in keys.compactMap { known[$0] } }
    }
}
