import RangeCache

/// Files whose feed, at a refresh, gives another enclosure URL, date or
/// length (`Catalog.Renewal`): the reader reads them from the new link
/// from then on, as the next mount would.
extension EpisodeReader {
    // MARK: - Public methods

    /// Takes the renewed files of a refresh. An enclosure at another path
    /// is another file (`CacheIndex.register`, as at a remount): an idle
    /// episode forgets its bytes, validator and variant now, in the durable
    /// order (the index, then the scratch file, then the state, which
    /// starts afresh at the new link: `StateCell.forgetIfIdle`), so an
    /// `Episode` from before the move that someone still holds (a keeper's
    /// download, a size check, a scan's fetch ahead) asks the new link too.
    /// One read meanwhile (opened since the refresh found it idle) keeps
    /// its pinned link and bytes until it is idle, at a later flush pass
    /// (`followPendingMoves`). A new query alone (a signed or tracking
    /// link) keeps everything, as a remount does; the new link is asked
    /// from then on, and the index learns it at the next mount.
    public func follow(_ renewals: [Catalog.Renewal]) {
        for renewal in renewals where renewal.before.url != renewal.after.url {
            let episode = renewal.after
            known.meet(episode)
            guard renewal.enclosureMoved else {
                // The new signed or tracking link is asked from now on:
                // the pinned one (the old link, or where it led) may have
                // expired. A complete episode keeps its link: it asks none.
                episode.state.withLock { state in
                    state.enclosureURL = episode.url
                    _ = state.forgetRedirect(enclosureURL: episode.url)
                }
                continue
            }
            if !forgetMoved(episode) {
                pendingMoves.withLock { $0[episode.key] = episode }
                logger.info(
                    "an episode's enclosure moved to another file while it is read; its cached bytes go once it is closed",
                    metadata: ["episode.url": .url(episode.url), "episode.key": "\(episode.key)"])
            }
        }
    }

    /// Whether `episode` moved to another file and waits to forget the old
    /// one: the keeper's download of it gives way (closes its file and
    /// stops its fills), so that it goes at the next flush pass and the
    /// download starts again at the new link.
    func isMoving(_ episode: Episode) -> Bool {
        pendingMoves.withLock { $0[episode.key] != nil }
    }

    /// Each flush pass: the episodes moved while they were read forget
    /// the old file once they are idle.
    func followPendingMoves() {
        let pending = pendingMoves.withLock { $0 }
        guard !pending.isEmpty else { return }
        for (key, episode) in pending where forgetMoved(episode) {
            pendingMoves.withLock { moves in
                if moves[key] === episode { moves[key] = nil }
            }
        }
    }

    // MARK: - Private methods

    /// Forgets the old file of `episode`, whose enclosure moved to
    /// `episode.url`, if it is idle. Returns whether it did.
    private func forgetMoved(_ episode: Episode) -> Bool {
        let path = index.dataPath(forKey: episode.key)
        let entry = (key: episode.key, url: episode.url)
        let forgotten = durability.lock.withLock { _ -> Bool in
            // Lock order as everywhere: the index lock, then the episode's.
            episode.state.forgetIfIdle(movingTo: episode.url) {
                do {
                    _ = try index.register(feedURL: episode.folder.feedURL, episodes: [entry])
                } catch {
                    logger.warning(
                        "could not forget the cached bytes of an episode whose enclosure moved; trying again",
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
        }
        return forgotten
    }
}
