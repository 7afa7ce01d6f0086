import RangeCache

/// Files whose feed, at a refresh, gives another enclosure URL, date or
/// length (`Catalog.Renewal`): the reader reads them from the new link
/// from then on, as the next mount would.
extension EpisodeReader {
    // MARK: - Public methods

    /// Takes the renewed files of a refresh. An enclosure at another path
    /// is another file (`CacheIndex.register`, as at a remount): an episode
    /// no one reads forgets its bytes, validator and variant now, in the
    /// durable order (the index, then the scratch file, then the state).
    /// One being read is not renewed (`Catalog.makeShow`) until a refresh
    /// finds it idle; one opened since that check keeps its bytes, and its
    /// next requests and open ask the new link with `If-Range`, so a
    /// different file there is a new version, never a mix. A new query
    /// alone (a signed or tracking link) keeps everything, as a remount
    /// does.
    public func follow(_ renewals: [Catalog.Renewal]) {
        for renewal in renewals {
            let episode = renewal.after
            known.meet(episode)
            guard renewal.before.url != episode.url else { continue }
            let entry = (key: episode.key, url: episode.url)
            let feedURL = episode.folder.feedURL
            guard renewal.enclosureMoved else {
                do {
                    try index.register(feedURL: feedURL, episodes: [entry])
                } catch {
                    logger.warning(
                        "could not save an episode's new link; the next mount asks it again",
                        metadata: ["episode.url": .url(episode.url), "error": "\(error)"])
                }
                continue
            }
            let path = index.dataPath(forKey: episode.key)
            let forgotten = durability.lock.withLock { _ -> Bool in
                // Lock order as everywhere: the index lock, then the episode's.
                episode.state.forgetIfIdle {
                    do {
                        try index.register(feedURL: feedURL, episodes: [entry])
                    } catch {
                        logger.warning(
                            "could not forget the cached bytes of an episode whose enclosure moved",
                            metadata: ["episode.url": .url(episode.url), "error": "\(error)"])
                        return false
                    }
                    do {
                        try ScratchFile.remove(path: path)
                    } catch {
                        logger.warning(
                            "could not delete the cache file of an episode whose enclosure moved",
                            metadata: ["path": "\(path)", "error": "\(error)"])
                    }
                    return true
                }
            }
            if forgotten {
                logger.info(
                    "an episode's enclosure moved to another file; its cached bytes were dropped",
                    metadata: ["episode.url": .url(episode.url), "episode.key": "\(episode.key)"])
            } else {
                // Read now: its next requests go to the new link, whose
                // answer is checked against the cached version.
                episode.state.withLock { $0.enclosureMoved(to: episode.url) }
                logger.info(
                    "an episode's enclosure moved to another file while it is read; its next requests check it",
                    metadata: ["episode.url": .url(episode.url), "episode.key": "\(episode.key)"])
            }
        }
    }
}
