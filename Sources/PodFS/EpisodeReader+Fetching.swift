import Dispatch
public import FUSEBridge
public import Logging
public import RangeCache

/// The network side of the reader: response heads, body chunks and the end
/// of each fetch, all on the network thread.
extension EpisodeReader {
    // MARK: - Response head

    /// Checks the response against what is cached; a changed validator or
    /// length drops the cached ranges before any new byte is used.
    func fetch(_ fetch: Fetch, receivedHead head: FetchHead) -> Bool {
        let episode = fetch.episode
        var bodyStart: Int64 = 0
        var total: Int64?
        switch head.status {
        case 206:
            guard let first = head.rangeFirst, let last = head.rangeLast else {
                return failFetch(fetch, "the origin answered 206 without a usable Content-Range")
            }
            bodyStart = first
            total = head.total
            _ = last
        case 200:
            bodyStart = 0
            total = head.contentLength
        case 416:
            total = head.total
        default:
            // 408, 429 and 5xx are the origin being busy or briefly broken:
            // worth retrying. Anything else (404, 403, 410...) is final.
            let transient = head.status == 408 || head.status == 429 || (500..<600).contains(head.status)
            fetch.refuse(FetchError(
                isTransient: transient, isUnreachable: false,
                message: "the origin answered HTTP \(head.status) for \(head.effectiveURL)"))
            return false
        }
        guard let total else {
            return failFetch(fetch, "the origin did not tell the episode's length (no Content-Range total or Content-Length)")
        }
        var invalidate = false
        var opens: [(OpenReply, OpenOptions)] = []
        var dropped: [Episode.Waiter] = []
        var logIgnoresRange = false
        var indexUpdate: (drop: Bool, save: Bool) = (false, false)
        /// A changed version's old bytes and length: freed and resized only
        /// after the index forgot them (it must never list a punched byte).
        var reshape: (scratch: ScratchFile, old: Int64, new: Int64)?
        // Most heads confirm what is known and need no index update: they
        // run without the index lock, so they never wait for a flush's
        // fdatasync. A head that changes the version or the validator runs
        // under it, serialised with commits (a commit of old ranges must not
        // land after their drop).
        var needsIndexLock = false
        func applyHead(holdingIndexLock: Bool) -> Bool {
            let outcome = episode.state.withLock { state -> Bool in
                guard var progress = state.fetches[fetch.id], progress.generation == state.generation else {
                    return false
                }
                let changed = versionChanged(state, head: head, total: total)
                let touchesIndex =
                    changed || state.length != total || state.etag != head.etag
                    || state.lastModified != head.lastModified
                if touchesIndex && !holdingIndexLock {
                    needsIndexLock = true
                    return false
                }
                if changed {
                    state.kernelPagesStale = true
                    state.generation &+= 1
                    state.present = RangeSet()
                    state.spill.removeAll()
                    state.dirty = false
                    dropped = state.waiters
                    state.waiters.removeAll()
                    for (id, _) in state.fetches where id != fetch.id { state.fetches[id] = nil }
                    if let scratch = state.scratch, let old = state.length, old > 0 {
                        reshape = (scratch, old, total)
                    }
                    indexUpdate.drop = true
                    invalidate = true
                    logger.warning(
                        "the episode changed at the origin; its cached bytes were dropped",
                        metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
                }
                if state.length != total {
                    if let scratch = state.scratch, reshape == nil { try? scratch.resize(to: total) }
                    state.length = total
                    invalidate = true
                }
                if touchesIndex {
                    indexUpdate.save = true
                }
                state.etag = head.etag
                state.lastModified = head.lastModified
                state.effectiveURL = head.effectiveURL
                state.validated = true
                state.validatedAt = monotonicSeconds()
                state.probeID = nil
                if head.status == 200, progress.cursor > 0 || progress.upper < total, !state.warnedIgnoresRange, !changed {
                    state.warnedIgnoresRange = true
                    logIgnoresRange = true
                }
                progress.generation = state.generation
                progress.cursor = bodyStart
                progress.upper = head.status == 416 ? bodyStart : (head.status == 200 ? total : min(total, (head.rangeLast ?? 0) + 1))
                state.fetches[fetch.id] = progress
                for waiter in state.openWaiters {
                    state.handles[waiter.handle] = Episode.HandleState(generation: state.generation)
                    // After a change the kernel must drop its pages of the old
                    // version before this open reads: keep_cache off does that
                    // at the open (the inode invalidation is only queued).
                    opens.append((waiter.reply, OpenOptions(handle: waiter.handle, keepCache: !state.kernelPagesStale)))
                }
                if !state.openWaiters.isEmpty { state.kernelPagesStale = false }
                state.openWaiters.removeAll()
                if state.scratch == nil, total > 0 {
                    _ = try? ensureScratch(&state, episode: episode, length: total)
                }
                return true
            }
            if outcome {
                do {
                    if indexUpdate.drop {
                        try index.dropRanges(key: episode.key)
                        // Still on the network thread, before any byte of
                        // the new version is written.
                        if let reshape {
                            try? reshape.scratch.punchHole(0..<reshape.old)
                            if reshape.old != reshape.new { try? reshape.scratch.resize(to: reshape.new) }
                        }
                    }
                    if indexUpdate.save {
                        try index.setValidator(
                            key: episode.key, length: total, etag: head.etag, lastModified: head.lastModified)
                    }
                } catch {
                    logger.error("could not update the cache index", metadata: ["error": "\(error)"])
                }
            }
            return outcome
        }
        var accepted = applyHead(holdingIndexLock: false)
        if needsIndexLock {
            accepted = indexLock.withLock { _ in applyHead(holdingIndexLock: true) }
        }
        if logIgnoresRange {
            logger.notice(
                "the origin ignores Range requests; streaming the episode from its start",
                metadata: ["episode.url": "\(episode.url)"])
        }
        if invalidate { invalidator.withLock { $0 }?.invalidate(inode: episode.inode) }
        for waiter in dropped { waiter.reply.fail(.ioError) }
        for (reply, options) in opens { reply.opened(options) }
        if accepted { answerWaitersAtEnd(episode) }
        return accepted
    }

    // MARK: - Body

    /// Writes a chunk at its offset, then marks it present and wakes the
    /// readers whose bytes are now all on disk. A chunk that cannot be
    /// written (full disk) is kept in memory for the readers instead.
    func fetch(_ fetch: Fetch, received body: UnsafeRawBufferPointer) -> Bool {
        let episode = fetch.episode
        let target: (ScratchFile?, Int64, Int)? = episode.state.withLock { state in
            guard let progress = state.fetches[fetch.id], progress.generation == state.generation,
                state.scratch != nil || state.length != nil
            else { return nil }
            let room = progress.upper - progress.cursor
            return (state.scratch, progress.cursor, Int(min(Int64(body.count), max(0, room))))
        }
        guard let (scratch, offset, count) = target else { return false }
        let chunk = UnsafeRawBufferPointer(rebasing: body[0..<count])
        var written = count > 0
        if count > 0 {
            fetch.madeProgress()
            if let scratch, !disk.isFull {
                do {
                    try scratch.write(chunk, at: offset)
                } catch {
                    written = false
                    cacheWriteFailed(error, episode: episode)
                }
            } else {
                written = false
            }
        }
        var ready: [(Episode.Waiter, ScratchFile?, [SpillBuffer.Piece])] = []
        let keepGoing: Bool = episode.state.withLock { state in
            guard var progress = state.fetches[fetch.id], progress.generation == state.generation else { return false }
            if count > 0 {
                if written {
                    state.present.insert(offset..<offset + Int64(count))
                    state.dirty = true
                } else if !state.handles.isEmpty {
                    state.spill.add(
                        chunk, at: offset, limit: tuning.spillLimit, needed: state.waiters.map(\.range))
                }
                progress.cursor = offset + Int64(count)
                state.fetches[fetch.id] = progress
            }
            let available = state.available
            state.waiters.removeAll { waiter in
                guard available.contains(waiter.range) else { return false }
                ready.append((waiter, state.scratch, state.spill.pieces(overlapping: waiter.range)))
                return true
            }
            // A body longer than its Content-Range is a lying origin: stop.
            return count == body.count
        }
        if written {
            markDirty(episode)
            if tuning.commitEveryChunk { flush() }
        } else if count > 0 {
            disk.noteSpilled(count, episode: episode)
        }
        for (waiter, scratch, spilled) in ready {
            serve(waiter.range, from: scratch, spilled: spilled, episode: episode, reply: waiter.reply)
        }
        if !keepGoing {
            logger.warning("the origin sent more bytes than it announced; the extra bytes were ignored",
                           metadata: ["episode.url": "\(episode.url)"])
        }
        return keepGoing
    }

    // MARK: - Completion

    /// Ends a fetch: retries a transient failure from where it stopped, or
    /// fails the readers nothing else will serve.
    func fetch(_ fetch: Fetch, completedWith error: FetchError?) {
        let episode = fetch.episode
        enum Next { case done, retry(Range<Int64>, String?, String, Int) }
        var failure = error
        let next: Next = episode.state.withLock { state in
            guard let progress = state.fetches[fetch.id] else { return .done }
            if failure == nil, progress.cursor < progress.upper {
                failure = FetchError(
                    isTransient: true, isUnreachable: false,
                    message: "the origin closed the response \(progress.upper - progress.cursor) bytes early")
            }
            if let failure, failure.isTransient, progress.generation == state.generation {
                let attempt = fetch.nextAttempt()
                if attempt < tuning.attempts && !(failure.isUnreachable && !state.validated && state.length != nil) {
                    state.fetches[fetch.id]?.retrying = true
                    return .retry(
                        progress.cursor..<progress.upper, validator(state), state.effectiveURL ?? episode.url, attempt)
                }
            }
            state.fetches[fetch.id] = nil
            return .done
        }
        switch next {
        case .retry(let range, let validator, let url, let attempt):
            let delay = 0.1 * Double(1 << min(attempt, 5))
            logger.info(
                "retrying a fetch",
                metadata: ["episode.url": "\(url)", "range.lower": "\(range.lowerBound)", "error": "\(failure?.message ?? "")"])
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [source] in
                episode.state.withLock { $0.fetches[fetch.id]?.retrying = false }
                source.fetch(url: url, range: range, validator: validator, sink: fetch)
            }
        case .done:
            if let failure {
                logger.error(
                    "could not fetch episode bytes",
                    metadata: ["episode.url": "\(episode.url)", "error": "\(failure.message)"])
            }
            settleAfterFetch(episode, fetchID: fetch.id, failure: failure)
        }
    }

    // MARK: - Private helpers

    /// Whether a response shows the origin's bytes differ from the cached ones.
    private func versionChanged(_ state: Episode.State, head: FetchHead, total: Int64) -> Bool {
        guard state.length != nil || state.etag != nil || state.lastModified != nil else { return false }
        if let old = state.length, old != total { return true }
        if let old = state.etag, let new = head.etag { return old != new }
        if state.etag == nil, let old = state.lastModified, let new = head.lastModified { return old != new }
        return false
    }

    private func failFetch(_ fetch: Fetch, _ message: String) -> Bool {
        fetch.refuse(FetchError(isTransient: false, isUnreachable: false, message: message))
        return false
    }

    /// Answers reads that ask for bytes at or past the (now known) end.
    private func answerWaitersAtEnd(_ episode: Episode) {
        var ready: [(Episode.Waiter, ScratchFile?, [SpillBuffer.Piece])] = []
        episode.state.withLock { state in
            guard let length = state.length else { return }
            let available = state.available
            state.waiters = state.waiters.compactMap { waiter in
                var waiter = waiter
                waiter.range = min(waiter.range.lowerBound, length)..<min(waiter.range.upperBound, length)
                if available.contains(waiter.range) {
                    ready.append((waiter, state.scratch, state.spill.pieces(overlapping: waiter.range)))
                    return nil
                }
                return waiter
            }
        }
        for (waiter, scratch, spilled) in ready {
            if waiter.range.isEmpty {
                waiter.reply.data(UnsafeRawBufferPointer(start: nil, count: 0))
            } else {
                serve(waiter.range, from: scratch, spilled: spilled, episode: episode, reply: waiter.reply)
            }
        }
    }

    /// After a fetch ended: answers opens still waiting (offline: from the
    /// cache if it has a length) and fails reads no fetch will serve.
    private func settleAfterFetch(_ episode: Episode, fetchID: UInt64, failure: FetchError?) {
        var failedReads: [DataReply] = []
        var opens: [(OpenReply, OpenOptions?)] = []
        episode.state.withLock { state in
            let stillPending = state.fetches.values.contains { $0.generation == state.generation }
            // The opens wait for the probe; if it ended without a usable head,
            // or every fetch ended, answer them now.
            let probeEnded = state.probeID == fetchID || state.probeID.map { state.fetches[$0] == nil } ?? false
            if !state.validated && (!stillPending || probeEnded) {
                state.probeID = nil
                let usable = state.length != nil && failure?.isUnreachable == true
                for waiter in state.openWaiters {
                    if usable {
                        state.handles[waiter.handle] = Episode.HandleState(generation: state.generation)
                        opens.append((waiter.reply, OpenOptions(handle: waiter.handle, keepCache: !state.kernelPagesStale)))
                    } else {
                        opens.append((waiter.reply, nil))
                    }
                }
                if usable && !state.openWaiters.isEmpty { state.kernelPagesStale = false }
                state.openWaiters.removeAll()
            }
            var pending = RangeSet()
            for progress in state.fetches.values where progress.generation == state.generation {
                pending.insert(progress.cursor..<max(progress.cursor, progress.upper))
            }
            let available = state.available
            state.waiters.removeAll { waiter in
                let gaps = available.gaps(in: waiter.range)
                let served = gaps.allSatisfy { pending.contains($0) }
                if !served { failedReads.append(waiter.reply) }
                return !served
            }
        }
        for (reply, options) in opens {
            if let options { reply.opened(options) } else { reply.fail(.ioError) }
        }
        for reply in failedReads { reply.fail(.ioError) }
        answerWaitersAtEnd(episode)
    }
}
