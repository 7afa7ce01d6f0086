import Logging

/// The driver's side of a durable step that fails (docs/DESIGN.md, "A
/// durable step that fails"): the episode stops, its readers get EIO, and
/// each flush pass tries the steps again, under the index lock, until the
/// index and the scratch file took the change.
extension EpisodeReader {
    // MARK: - Methods

    /// A version change's durable steps `unfinished` were not done: the
    /// episode stops (`Episode.State.stepsFailed`) and is tried again at
    /// the next flush pass. `then` is what the change would do next
    /// (answering its opens, failing its reads); `fetch` is the transfer
    /// whose head made the change, stopped.
    func stop(
        _ episode: Episode, unfinished: [Episode.State.Effect], then: [Episode.State.Effect], fetch: Fetch?
    ) {
        let effects = episode.state.withLock { $0.stepsFailed(unfinished, then: then) }
        stoppedEpisodes.mark(episode)
        logger.error(
            """
            the episode changed at the origin, and the cache could not forget its old bytes yet: it reads EIO \
            until it can (tried again at each flush); see the error before this line
            """,
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
        carryOut(effects, of: episode, EffectContext(fetch: fetch))
    }

    /// Tries again the unfinished steps of every stopped episode (the flush
    /// pass). An episode whose steps are done reads again; one whose steps
    /// fail again stays stopped.
    func retryUnfinishedSteps() {
        for episode in stoppedEpisodes.takeAll() {
            let unfinished = indexLock.withLock { _ in
                carryOutDurable(episode.state.withLock(\.stepsDue), of: episode)
            }
            if unfinished.isEmpty {
                episode.state.withLock { $0.stepsDone() }
                logger.notice(
                    "the cache took the episode's new version; it reads again",
                    metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
            } else {
                _ = episode.state.withLock { $0.stepsFailed(unfinished, then: []) }
                stoppedEpisodes.mark(episode)
            }
        }
    }
}
