import Dispatch
import Feeds
import Foundation
import FUSEBridge
import Logging
import RangeCache
import ReadRules

/// The network side of the reader: response heads, body chunks and the end
/// of each fetch, all on the network thread.
extension EpisodeReader {
    // MARK: - Response head

    /// Checks the response against what is cached (`Episode.State.head`)
    /// and carries out what it says; `false` stops the transfer.
    ///
    /// Most heads confirm what is known, or only tell the length and
    /// validator of an episode with nothing cached of another version: they
    /// run without the index lock, so they never wait for a flush's
    /// `fdatasync`, and the validator is saved with the next commit of
    /// ranges. A head that changes the version runs again under the index
    /// lock, serialised with commits, and drops the old ranges durably
    /// before any new byte reaches the scratch file (a commit of old ranges
    /// must not land after their drop, and old ranges must never vouch for
    /// new bytes after a crash).
    func fetch(_ fetch: Fetch, receivedHead head: FetchHead, askedFrom asked: Int64) -> Bool {
        let episode = fetch.episode
        let (start, last, total): (Int64, Int64?, Int64)
        switch Episode.State.reading(head, asked: asked) {
        case .body(let first, let end, let length):
            (start, last, total) = (first, end, length)
        case .unusable(let reason):
            fetch.refuse(FetchError(isTransient: false, isUnreachable: false, message: reason))
            return false
        case .status:
            // The one rule for what is worth asking again (`OriginAnswer`);
            // a 2xx other than 200 and 206 is no answer to a range request.
            let answer = OriginAnswer(status: head.status, retryAfter: head.retryAfter, now: Date().timeIntervalSince1970)
            var failure = answer.failure(status: head.status, url: head.effectiveURL)
            if !failure.isTransient {
                failure.isTransient = episode.state.withLock { $0.forgetRedirect(enclosureURL: $0.enclosureURL ?? episode.url) }
            }
            fetch.refuse(failure)
            return false
        }
        var context = Episode.State.HeadContext(
            now: monotonicSeconds(), feedLength: episode.feedLength, isBackground: fetch.isBackground,
            holdingIndexLock: false)
        var outcome = episode.state.withLock { $0.head(id: fetch.id, head, start: start, last: last, total: total, context: context) }
        var unfinished: [Episode.State.Effect] = []
        if outcome.verdict == .needsIndexLock {
            (outcome, unfinished) = durability.lock.withLock { _ in
                context.holdingIndexLock = true
                context.existingScratch = existingScratch(of: episode).map(Episode.FileToken.init)
                let outcome = episode.state.withLock {
                    $0.head(id: fetch.id, head, start: start, last: last, total: total, context: context)
                }
                return (outcome, durability.carryOut(outcome.transition.durable, of: episode))
            }
        } else {
            unfinished = durability.carryOut(outcome.transition.durable, of: episode)
        }
        guard outcome.verdict == .accepted else { return false }
        guard unfinished.isEmpty else {
            stop(episode, unfinished: unfinished, then: outcome.transition.then, fetch: fetch)
            return false
        }
        let goesOn = carryOut(outcome.transition.then, of: episode, EffectContext(fetch: fetch))
        if !goesOn, fetch.isSizeCheck, head.status == 206, let count = head.contentLength, count <= 4096 {
            fetch.discardBody(count: count)
            return true
        }
        return goesOn
    }

    /// The scratch file of an episode not opened in this mount, if its
    /// cached version left one (a change must free its bytes too).
    private func existingScratch(of episode: Episode) -> ScratchFile? {
        guard let old = episode.state.withLock({ $0.scratch == nil ? $0.length : nil }) else { return nil }
        let path = index.dataPath(forKey: episode.key)
        guard ScratchFile.exists(path: path) else { return nil }
        return try? ScratchFile(path: path, length: old)
    }

    /// The log lines a head's effects ask for.
    func log(_ effect: Episode.State.Effect, of episode: Episode) {
        let names: Logger.Metadata = ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"]
        switch effect {
        case .logChanged:
            logger.warning("the episode changed at the origin; its cached bytes were dropped", metadata: names)
        case .logVariantGone(let dropped):
            logger.warning(
                """
                the link of the variant this episode was cached from stopped working, and the host now \
                serves another variant: its cached bytes were dropped and the episode is fetched again as \
                one variant; a player that has it open reads what was cached of the old one and gets an \
                error past it, then opens it again
                """,
                metadata: names.merging(["dropped.bytes": "\(dropped)"]) { first, _ in first })
        case .logUnproven(let dropped):
            logger.warning(
                """
                this episode's cached bytes came from responses without a validator (no ETag, no \
                Last-Modified), which cannot be shown to be one variant: a host that stitches ads may have \
                mixed them; they were dropped and the episode is fetched again whole from its start
                """,
                metadata: names.merging(["dropped.bytes": "\(dropped)"]) { first, _ in first })
        case .logKeptFinal:
            logger.info(
                "kept the complete episode; its host now serves another variant at another link", metadata: names)
        case .logIgnoresRange:
            logger.notice(
                "the origin ignores Range requests; streaming the episode from its start",
                metadata: ["episode.url": .url(episode.url)])
        default:
            break
        }
    }

    // MARK: - Body

    /// Takes a chunk of body bytes on the network thread and queues it for
    /// the episode's writer; `false` stops the transfer (the fetch is stale
    /// or the origin sent more than it announced).
    ///
    /// Waits while too many bytes are queued for writing: when the disk is
    /// slower than the network, memory stays flat.
    func fetch(_ fetch: Fetch, handOff chunk: BodyChunk) -> Bool {
        let episode = fetch.episode
        let now = monotonicSeconds()
        let plan = episode.state.withLock { $0.bodyArrived(id: fetch.id, count: chunk.count, now: now) }
        guard let plan else { return false }
        if !plan.early.isEmpty {
            let arriving = EffectContext.Arriving(
                chunk: chunk, count: plan.count, offset: plan.offset, generation: plan.generation)
            carryOut(plan.answers, of: episode, EffectContext(arriving: arriving))
        }
        if plan.count > 0 {
            fetch.madeProgress()
            let (offset, count, generation) = (plan.offset, plan.count, plan.generation)
            io.writeBudget.acquire(count)
            io.writer(for: episode).async { [self] in
                defer { io.writeBudget.release(count) }
                write(chunk, count: count, at: offset, generation: generation, for: fetch)
            }
        }
        if plan.count < chunk.count, plan.yielded {
            // Cut short for a reader that jumped: the rest is deferred.
            return false
        }
        if plan.count < chunk.count {
            // A body longer than its Content-Range is a lying origin: stop.
            logger.warning(
                "the origin sent more bytes than it announced; the extra bytes were ignored",
                metadata: ["episode.url": .url(episode.url)])
            return false
        }
        return true
    }

    /// On the episode's writer: writes a chunk at its offset, then marks it
    /// present and wakes the readers whose bytes are now all there. A chunk
    /// that cannot be written (full disk) is kept in memory for the open
    /// files' readers instead (see `Eviction`, `DiskSpace`).
    ///
    /// One serial writer per episode keeps its writes in the order they
    /// arrived: bytes of an older version that were queued before a version
    /// change land before any byte of the new version and are never marked
    /// present, so they cannot overwrite new bytes that are.
    private func write(_ chunk: BodyChunk, count: Int, at offset: Int64, generation: UInt64, for fetch: Fetch) {
        let episode = fetch.episode
        // Overlap bytes are held and compared, never written (see
        // `EpisodeReader+Variants`); the rest of the chunk is written.
        let original = (offset: offset, count: count)
        guard let (offset, count, skipped) = holdOverlap(chunk, count: count, at: offset, generation: generation, for: fetch)
        else { return }
        let end = offset + Int64(count)
        if !disk.isFull {
            // Created outside the lock; a failure is logged and the bytes
            // go to memory (see `DiskSpace`).
            _ = scratchFile(of: episode)
        }
        // Long fetches allocate their blocks ahead of the writes (see
        // `ScratchFile.allocate`).
        let target = episode.state.withLock {
            $0.writeTarget(id: fetch.id, generation: generation, range: offset..<end, step: Self.preallocationStep)
        }
        guard let (token, allocation, _) = target else { return }
        let scratch = token?.file
        let bytes = UnsafeRawBufferPointer(rebasing: chunk.bytes[skipped..<skipped + count])
        var written = false
        if let scratch, !disk.isFull {
            // A failure here (no room, no support) shows in the write below.
            if let allocation { try? scratch.allocate(allocation) }
            do {
                try scratch.write(bytes, at: offset)
                written = true
            } catch {
                disk.writeFailed(error, episode: episode, logger: logger)
            }
        }
        // Held overlaps these bytes complete are compared before the bytes
        // are marked present: a mismatch drops them unseen.
        if written, !compareHeldOverlaps(of: episode, written: offset..<end) { return }
        let ready = episode.state.withLock { state in
            state.bodyWritten(
                id: fetch.id, range: offset..<end, generation: generation, written: written, bytes: bytes,
                spillLimit: tuning.spillLimit)
        }
        guard let ready else { return }
        if written {
            durability.markDirty(episode)
            if tuning.commitEveryChunk { flush() }
        } else {
            disk.noteSpilled(count, episode: episode)
        }
        guard !ready.isEmpty else { return }
        // Readers of this chunk's bytes are answered from it, unless its
        // first bytes were held for a comparison, not written.
        let arriving = skipped == 0
            ? EffectContext.Arriving(chunk: chunk, count: original.count, offset: original.offset, generation: generation)
            : nil
        carryOut(ready.map(\.answer), of: episode, EffectContext(arriving: arriving))
    }

    /// How many bytes a long fetch allocates ahead of its writes.
    private static var preallocationStep: Int64 { 8 * 1024 * 1024 }

    // MARK: - Completion

    /// Called on the network thread when a transfer ended; the completion
    /// runs on the episode's writer, after every chunk queued before it.
    func fetchCompleted(_ fetch: Fetch, error: FetchError?) {
        // A retry registers its attempt again when it goes out.
        fetch.episode.transfers.withLock { $0[fetch.id] = nil }
        if !fetch.forKeeper { network.foreground.ended(fetch.episode) }
        io.complete(on: fetch.episode) { [self] in
            self.fetch(fetch, completedWith: error)
        }
    }

    /// Ends a fetch (`Episode.State.fetchEnded`): a transient failure is
    /// retried from where it stopped, else the readers nothing else will
    /// serve fail (`Effect.retry`, `.settle`).
    private func fetch(_ fetch: Fetch, completedWith error: FetchError?) {
        // Counted here for every end: a fetch that is not tried again is
        // forgotten, so the count only matters for one that is.
        let attempt = fetch.nextAttempt()
        let (next, failure) = fetch.episode.state.withLock { state in
            state.fetchEnded(id: fetch.id, error: error, attempt: attempt, tuning: tuning)
        }
        carryOut([next], of: fetch.episode, EffectContext(fetch: fetch, failure: failure))
    }

    /// Tries `fetch` again after `delay` (`Effect.retry`). What to ask is
    /// decided when the delay has passed (`Episode.State.retryDue`: an
    /// `Effect.launch` or `.settle`). After shutdown the source refuses at
    /// once, and the completion fails the readers before the session goes.
    func retry(_ fetch: Fetch, range: Range<Int64>, url: String?, attempt: Int, after delay: Double, failure: FetchError?) {
        let episode = fetch.episode
        logger.log(
            level: stopping.load(ordering: .acquiring) ? .debug : .info, "retrying a fetch",
            metadata: [
                "episode.url": .url(url ?? episode.url), "range.lower": "\(range.lowerBound)",
                "attempt": "\(attempt)", "delay.seconds": "\(delay)", "error": "\(failure?.message ?? "")",
            ])
        io.afterDelay(delay) { [self] in
            let next = episode.state.withLock { $0.retryDue(id: fetch.id) }
            carryOut([next], of: episode, EffectContext(fetch: fetch))
        }
    }

    /// After a fetch ended for good (`Effect.settle`): says why, if it
    /// failed, and carries out `Episode.State.fetchSettled`.
    func settle(_ fetch: Fetch, failure: FetchError?) {
        let episode = fetch.episode
        if let failure, fetch.isSizeCheck {
            // A size check: the sizer says it once a show (`Sizer`).
            logger.debug(
                "could not learn an episode's size from its origin",
                metadata: ["episode.url": .url(episode.url), "error": "\(failure.message)"])
        } else if let failure, fetch.isBackground {
            logger.info(
                "could not check a recently read episode with its origin; its first open will ask again",
                metadata: ["episode.url": .url(episode.url), "error": "\(failure.message)"])
        } else if let failure {
            // A cover the keeper fetches is said by the keeper, once
            // (feeds often name art their host no longer has).
            let quiet = (fetch.forKeeper && !episode.isEpisode) || stopping.load(ordering: .acquiring)
            logger.log(
                level: quiet ? .debug : .error, "could not fetch episode bytes",
                metadata: ["episode.url": .url(episode.url), "error": "\(failure.message)"])
        }
        let (effects, target) = episode.state.withLock { state in
            let effects = state.fetchSettled(
                id: fetch.id, failure: failure, isBackground: fetch.isBackground, minimumFetch: tuning.minimumFetch)
            return (effects, self.target(state, of: episode))
        }
        let context = EffectContext(
            target: target, settled: (fetch.id, failure != nil), fetchLog: "fetching what a fetch gave up for a jump")
        carryOut(effects, of: episode, context)
    }
}
