import FUSEBridge
import Logging
import RangeCache
import ReadRules

/// The one place the read rules' effects are carried out
/// (`Episode.State.Effect`), outside the episode's lock, in their order.
extension EpisodeReader {
    // MARK: - Nested types

    /// What some effects need beyond the episode, from the event that
    /// decided them.
    struct EffectContext {
        /// Body bytes at hand: a chunk whose first `count` bytes belong at
        /// `offset`, of version `generation`.
        struct Arriving {
            var chunk: BodyChunk
            var count: Int
            var offset: Int64
            var generation: UInt64
        }

        /// Where `.fetch` goes (`target`, taken under the lock with the
        /// event); asked again when not given.
        var target: RequestTarget?
        /// The version a `.serve` was decided on: a read is never served
        /// from another version's file.
        var generation: UInt64?
        /// The transfer whose head the effects follow (`.endAfterHead`), or
        /// that ended (`.retry`, `.launch`, `.settle`).
        var fetch: Fetch?
        /// Why that fetch ended, if it failed (the log, `fetchSettled`).
        var failure: FetchError?
        /// The read that made them, for the log.
        var read: (offset: Int64, size: Int)?
        /// The effects settle fetch `id`, which ended (`failed`: with an
        /// error), for the log.
        var settled: (id: UInt64, failed: Bool)?
        /// The cache's own open and fetches (the keeper's, a scan's fetch
        /// ahead, `Fetch.forKeeper`), logged as `fetchLog`.
        var forKeeper = false
        var fetchLog = "fetching"
        /// The chunk that just arrived or was written: `.serveArriving`
        /// answers from it, and `.serveFile` takes its bytes rather than
        /// read them back.
        var arriving: Arriving?
    }

    // MARK: - Methods

    /// Carries out `effects` of `episode`, in their order, outside its
    /// lock. Returns whether the transfer whose head they follow goes on.
    /// A version change's durable steps go through `Durability.carryOut`
    /// instead, which stops at the first failure.
    @discardableResult
    func carryOut(_ effects: [Episode.State.Effect], of episode: Episode, _ context: EffectContext = .init()) -> Bool {
        var goesOn = true
        for effect in effects {
            do {
                if try !carryOut(effect, of: episode, context) { goesOn = false }
            } catch {
                logger.error("could not update the cache index", metadata: ["error": "\(error)"])
            }
        }
        return goesOn
    }

    /// A version change's durable steps `unfinished` were not done
    /// (`Durability.carryOut`): the episode stops
    /// (`Episode.State.stepsFailed`) and its steps are tried again
    /// (`Durability.retryLater`). `then` is what the change would do next
    /// (answering its opens, failing its reads); `fetch` is the transfer
    /// whose head made the change, stopped.
    func stop(
        _ episode: Episode, unfinished: [Episode.State.Effect], then: [Episode.State.Effect], fetch: Fetch?
    ) {
        let effects = episode.state.withLock { $0.stepsFailed(unfinished, then: then) }
        durability.retryLater(episode)
        logger.error(
            """
            the episode changed at the origin, and the cache could not forget its old bytes yet: it reads EIO \
            until it can (tried again in a second, then less and less often); see the error before this line
            """,
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
        carryOut(effects, of: episode, EffectContext(fetch: fetch))
    }

    // MARK: - Private methods

    /// What the log says of a fetch an effect starts (built only when the
    /// debug line is logged).
    private static func fetchMetadata(
        _ episode: Episode, _ range: Range<Int64>, read: (offset: Int64, size: Int)?
    ) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "episode.key": "\(episode.key)", "range.lower": "\(range.lowerBound)", "range.upper": "\(range.upperBound)",
        ]
        if let read {
            metadata["read.offset"] = "\(read.offset)"
            metadata["read.size"] = "\(read.size)"
        }
        return metadata
    }

    /// An effect of a fetch's end carried out without that fetch: a
    /// driver's bug, which stops a debug build.
    private func fetchMissing(_ effect: Episode.State.Effect) -> Bool {
        assertionFailure("\(effect) needs the fetch it concerns")
        return true
    }

    /// Carries out one effect; `false` when it ends the transfer whose
    /// head it follows.
    private func carryOut(_ effect: Episode.State.Effect, of episode: Episode, _ context: EffectContext) throws -> Bool {
        switch effect {
        case .fetch(let id, let range):
            logger.debug("\(context.fetchLog)", metadata: Self.fetchMetadata(episode, range, read: context.read))
            let target = context.target ?? episode.state.withLock { self.target($0, of: episode) }
            startFetch(id, range: range, of: episode, to: target, forKeeper: context.forKeeper)
        case .probe(let probe):
            send(probe, of: episode, forKeeper: context.forKeeper)
        case .check(let probe):
            send(probe, of: episode, background: true, forKeeper: context.forKeeper)
        case .stop(let id):
            stop([id], of: episode)
        case .endAfterHead:
            context.fetch?.endAfterHead()
            return false
        case .recheck(let delay):
            scheduleRecheck(of: episode, after: delay)
        case .retry(let range, _, let url, let attempt, let delay):
            guard let fetch = context.fetch else { return fetchMissing(effect) }
            retry(fetch, range: range, url: url, attempt: attempt, after: delay, failure: context.failure)
        case .launch(let range, let validator, let url):
            guard let fetch = context.fetch else { return fetchMissing(effect) }
            launch(fetch, url: url ?? episode.url, range: range, validator: validator)
        case .settle:
            guard let fetch = context.fetch else { return fetchMissing(effect) }
            settle(fetch, failure: context.failure)
        case .answerOpen(let token, let answer):
            if let answer { token.reply.opened(answer.options) } else { token.reply.fail(.ioError) }
        case .serve, .serveFile, .serveArriving, .answerEmpty, .fail:
            carryOutAnswer(effect, of: episode, context)
        case .resume(let reads, let sized):
            resume((reads, sized), of: episode)
        case .answerAtEnd:
            carryOut(episode.state.withLock { $0.readsAtEnd() }.map(\.answer), of: episode)
        case .dropIndexRanges, .reshape, .replace, .saveVersion:
            try durability.carryOut(step: effect, of: episode)
        case .saveVersionLater:
            durability.markDirty(episode)
        case .markUnstable(let reason):
            known.stitchingShows.markUnstable(episode, reason: reason)
        case .invalidateKernel(let pages):
            // Dropping pages would wait on reads in flight, and a daemon
            // killed meanwhile would leave that wait hanging: a size
            // learned for the same bytes drops attributes only.
            let session = kernel.session
            if pages { session?.invalidate(inode: episode.inode) } else { session?.invalidateAttributes(inode: episode.inode) }
        case .logChanged, .logVariantGone, .logKeptFinal, .logIgnoresRange:
            log(effect, of: episode)
        case .logUnproven:
            // The mark was made when the index was read: it is kept now,
            // with the bytes of one stream.
            log(effect, of: episode)
            known.stitchingShows.record(episode, reason: Episode.State.noValidator)
        }
        return true
    }

    /// Carries out an effect that answers a read (`.serve`, `.serveFile`,
    /// `.serveArriving`, `.answerEmpty`, `.fail`).
    private func carryOutAnswer(_ effect: Episode.State.Effect, of episode: Episode, _ context: EffectContext) {
        switch effect {
        case .serve(let reply, let range, let spilled):
            let file = scratchFile(of: episode, generation: context.generation)
            answer(reply, with: .cached(range, file, spilled: spilled), episode: episode)
        case .serveFile(let reply, let range, let file, let spilled):
            if spilled.isEmpty, let at = context.arriving {
                // The chunk's bytes come from memory, which saves reading
                // back what was just written; the rest is on disk.
                answer(
                    reply, with: .arriving(range, at.chunk, count: at.count, at: at.offset, generation: at.generation),
                    episode: episode)
            } else {
                answer(reply, with: .cached(range, file?.file, spilled: spilled), episode: episode)
            }
        case .serveArriving(let reply, let range):
            if let at = context.arriving {
                answer(
                    reply, with: .arriving(range, at.chunk, count: at.count, at: at.offset, generation: at.generation),
                    episode: episode)
            } else {
                // Its bytes are not on disk yet: only the chunk holds them.
                assertionFailure("a read answered on arrival without the bytes that arrived")
                answer(reply, with: .eio, episode: episode)
            }
        case .answerEmpty(let reply):
            answer(reply, with: .empty, episode: episode)
        case .fail(let reply):
            if let settled = context.settled {
                // A failed fetch was logged as an error where it ended; one
                // that ended well without the read's bytes is said here.
                logger.log(
                    level: settled.failed ? .debug : .warning,
                    "a read fails: the fetch it waited for ended and no other brings its bytes",
                    metadata: ["episode.key": "\(episode.key)", "fetch.id": "\(settled.id)", "failed": "\(settled.failed)"])
            } else {
                logger.debug(
                    "a read fails: its file was stopped or replaced, its bytes are gone, or the size is unknown",
                    metadata: ["episode.key": "\(episode.key)"])
            }
            answer(reply, with: .eio, episode: episode)
        default:
            assertionFailure("\(effect) answers no read")
        }
    }
}
