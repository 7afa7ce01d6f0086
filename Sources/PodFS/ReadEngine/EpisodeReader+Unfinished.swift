import Dispatch
import Logging

/// The driver's side of a durable step that fails (docs/DESIGN.md, "A
/// durable step that fails"): the episode stops, its readers get EIO, and
/// the steps are tried again, under the index lock, until the index and the
/// scratch file took the change: by a timer (`StoppedEpisodes`: after 1 s,
/// then twice as long each time, at most 30 s) and at each flush pass.
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
        durability.stopped.mark(episode)
        logger.error(
            """
            the episode changed at the origin, and the cache could not forget its old bytes yet: it reads EIO \
            until it can (tried again in a second, then less and less often); see the error before this line
            """,
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
        carryOut(effects, of: episode, EffectContext(fetch: fetch))
        setStepRetryTimer()
    }

    /// Tries again the unfinished steps of every stopped episode (the flush
    /// pass). An episode whose steps are done reads again; one whose steps
    /// fail again stays stopped.
    func retryUnfinishedSteps() {
        for episode in durability.stopped.takeAll() {
            let unfinished = durability.lock.withLock { _ in
                carryOutDurable(episode.state.withLock(\.stepsDue), of: episode)
            }
            if unfinished.isEmpty {
                episode.state.withLock { $0.stepsDone() }
                logger.notice(
                    "the cache took the episode's new version; it reads again",
                    metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
            } else {
                _ = episode.state.withLock { $0.stepsFailed(unfinished, then: []) }
                durability.stopped.mark(episode)
            }
        }
        durability.stopped.allDone()
        setStepRetryTimer()
    }

    /// Sets the timer of the next try, if one is due and none is set.
    private func setStepRetryTimer() {
        guard let delay = durability.stopped.timerToSet() else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, durability.stopped.timerFired() else { return }
            retryUnfinishedSteps()
        }
    }
}
