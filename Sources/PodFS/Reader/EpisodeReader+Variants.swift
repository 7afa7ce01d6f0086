import Logging
import RangeCache

/// The driver's side of an episode's variant (docs/DESIGN.md, "Episodes
/// and their variants"): marks the state machine decided on, kept in the
/// index and said once in the log.
extension EpisodeReader {
    // MARK: - Methods

    /// The episode's origin serves different bytes per request: the mark
    /// goes to the index (a failure is logged; the mark is a hint, the
    /// bytes stay one variant either way).
    func markUnstable(_ episode: Episode, reason: String) {
        logger.notice(
            "the origin serves different bytes per request (it stitches ads per request); podfs keeps one variant",
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)", "reason": "\(reason)"])
        do {
            try index.markUnstable(key: episode.key, reason: reason)
        } catch {
            logger.warning("could not record an unstable origin in the cache index", metadata: ["error": "\(error)"])
        }
    }
}
