import Dispatch
import Feeds
import Foundation
import FUSEBridge
import Logging
import RangeCache

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
            // The one rule for what is worth asking again (`OriginAnswer`);
            // a 2xx other than 200 and 206 is no answer to a range request.
            let answer = OriginAnswer(status: head.status, retryAfter: head.retryAfter, now: Date().timeIntervalSince1970)
            var failure = answer.failure(status: head.status, url: head.effectiveURL)
            if !failure.isTransient {
                // The remembered end of the redirect chain (a signed CDN
                // link, say) may have expired: forget it and go through the
                // enclosure URL again, once.
                failure.isTransient = episode.state.withLock { state -> Bool in
                    guard state.effectiveURL != nil, state.effectiveURL != episode.url else { return false }
                    state.effectiveURL = nil
                    return true
                }
            }
            fetch.refuse(failure)
            return false
        }
        guard let total else {
            return failFetch(fetch, "the origin did not tell the episode's length (no Content-Range total or Content-Length)")
        }
        var invalidate = false
        var opens: [(any OpenReplying, OpenOptions)] = []
        var dropped: [Episode.Waiter] = []
        var logIgnoresRange = false
        var indexUpdate: (drop: Bool, save: Bool) = (false, false)
        var saveLater = false
        // Most heads confirm what is known, or only tell the length and
        // validator of an episode with nothing cached of another version:
        // they run without the index lock, so they never wait for a flush's
        // fdatasync, and the validator is saved with the next commit of
        // ranges. A head that changes the version runs under the lock,
        // serialised with commits, and drops the old ranges durably before
        // any new byte reaches the scratch file (a commit of old ranges must
        // not land after their drop, and old ranges must never vouch for
        // new bytes after a crash).
        /// A changed version's old bytes and length: freed and resized only
        /// after the index forgot them (it must never list a punched byte).
        var reshape: (scratch: ScratchFile, old: Int64, new: Int64)?
        var needsIndexLock = false
        var early: (reads: [Episode.EarlyRead], sized: [@Sendable () -> Void]) = ([], [])
        func applyHead(holdingIndexLock: Bool) -> Bool {
            let outcome = episode.state.withLock { state -> Bool in
                guard var progress = state.fetches[fetch.id], progress.generation == state.generation else {
                    return false
                }
                let changed = versionChanged(state, head: head, total: total)
                let validatorChanged =
                    changed || state.length != total || state.etag != head.etag
                    || state.lastModified != head.lastModified
                if changed && !holdingIndexLock {
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
                    // The old bytes are freed on disk too, also when the file
                    // was not open in this mount (a mount's check finds the
                    // change before anyone opened it): the index forgets
                    // them, and they would hold disk space it no longer counts.
                    let path = index.dataPath(forKey: episode.key)
                    if state.scratch == nil, let old = state.length, access(path, F_OK) == 0,
                        let existing = try? ScratchFile(path: path, length: old)
                    {
                        state.scratch = existing
                    }
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
                    // The kernel has seen the size `stat` showed so far; only
                    // a different one needs its caches dropped.
                    if (state.length ?? episode.feedLength ?? 0) != total { invalidate = true }
                    state.length = total
                }
                if changed {
                    indexUpdate.save = true
                } else if validatorChanged {
                    state.validatorDirty = true
                    saveLater = true
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
                progress.received = bodyStart
                // A mount's check answered with the whole episode (a new
                // version, or an origin that ignores Range) wants its head
                // only: nobody asked for the body.
                let bodyWanted = !(fetch.isBackground && head.status == 200)
                progress.upper = head.status == 416 || !bodyWanted
                    ? bodyStart : (head.status == 200 ? total : min(total, (head.rangeLast ?? 0) + 1))
                state.fetches[fetch.id] = progress
                for waiter in state.openWaiters {
                    state.handles[waiter.handle] = Episode.HandleState(generation: state.generation)
                    // After a change the kernel must drop its pages of the old
                    // version before this open reads: keep_cache off does that
                    // at the open (the inode invalidation is only queued), and
                    // the attributes it showed are dropped before it returns.
                    let options = OpenOptions(
                        handle: waiter.handle, keepCache: !state.kernelPagesStale,
                        dropAttributes: waiter.dropAttributes || invalidate)
                    opens.append((waiter.reply, options))
                }
                if !state.openWaiters.isEmpty { state.kernelPagesStale = false }
                state.openWaiters.removeAll()
                early = settleProvisionalHandles(&state)
                // A read that needs more than this response brings is made
                // again when the response ends, not now: its own request
                // then finds this connection free (a new one costs a round
                // trip more), and the window it opens is sized by the rate
                // this body showed. It could not be answered sooner anyway.
                let beyond = early.reads.filter { $0.offset + Int64($0.size) > progress.upper }
                if !beyond.isEmpty {
                    early.reads.removeAll { $0.offset + Int64($0.size) > progress.upper }
                    state.readsAfterProbe = (fetch.id, beyond)
                }
                // The scratch file of a new episode is created by its writer,
                // before the first chunk is written: creating an inode costs
                // a few hundred microseconds the first reader need not wait
                // for (it is answered from the chunk in memory).
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
        if saveLater { markDirty(episode) }
        if logIgnoresRange {
            logger.notice(
                "the origin ignores Range requests; streaming the episode from its start",
                metadata: ["episode.url": .url(episode.url)])
        }
        if invalidate {
            // A new version drops the kernel's pages too; a size learned for
            // the same bytes only needs the attributes (dropping pages would
            // wait on reads in flight, and a daemon killed meanwhile would
            // leave that wait hanging).
            let kernel = invalidator.withLock { $0 }
            if indexUpdate.drop { kernel?.invalidate(inode: episode.inode) } else { kernel?.invalidateAttributes(inode: episode.inode) }
        }
        for waiter in dropped { waiter.reply.fail(.ioError) }
        for (reply, options) in opens { reply.opened(options) }
        resume(early, of: episode)
        if accepted { answerWaitersAtEnd(episode) }
        if accepted, fetch.isBackground, head.status == 200 {
            // Its range is empty (see above): stop the transfer here.
            fetch.endAfterHead()
            return false
        }
        return accepted
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
        var early: [Episode.Waiter] = []
        let plan: (offset: Int64, count: Int, generation: UInt64)? = episode.state.withLock { state in
            guard var progress = state.fetches[fetch.id], progress.generation == state.generation,
                state.scratch != nil || state.length != nil
            else { return nil }
            let room = progress.upper - progress.received
            let count = Int(min(Int64(chunk.count), max(0, room)))
            let offset = progress.received
            progress.received += Int64(count)
            state.fetches[fetch.id] = progress
            if progress.answersOnArrival, count > 0 {
                // A reader that opened or jumped here waits for these bytes:
                // answer it now, from memory (and the disk for what was
                // there before); the writer stores the chunk next.
                var available = state.present
                available.insert(offset..<offset + Int64(count))
                state.waiters.removeAll { waiter in
                    guard waiter.generation == state.generation, available.contains(waiter.range),
                        waiter.range.overlaps(offset..<offset + Int64(count))
                    else { return false }
                    early.append(waiter)
                    return true
                }
            }
            return (offset, count, state.generation)
        }
        guard let plan else { return false }
        for waiter in early {
            answer(waiter, from: chunk, count: plan.count, at: plan.offset, episode: episode)
        }
        if plan.count > 0 {
            fetch.madeProgress()
            writeBudget.acquire(plan.count)
            writer(for: episode).async { [self] in
                defer { writeBudget.release(plan.count) }
                write(chunk, count: plan.count, at: plan.offset, generation: plan.generation, for: fetch)
            }
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
    /// files' readers instead (see `EpisodeReader+DiskFull`).
    ///
    /// One serial writer per episode keeps its writes in the order they
    /// arrived: bytes of an older version that were queued before a version
    /// change land before any byte of the new version and are never marked
    /// present, so they cannot overwrite new bytes that are.
    private func write(_ chunk: BodyChunk, count: Int, at offset: Int64, generation: UInt64, for fetch: Fetch) {
        let episode = fetch.episode
        let end = offset + Int64(count)
        if !disk.isFull {
            // Created outside the lock; a failure is logged and the bytes
            // go to memory (see EpisodeReader+DiskFull).
            _ = scratchFile(of: episode)
        }
        let target: (ScratchFile?, Range<Int64>?)? = episode.state.withLock { state in
            guard state.generation == generation, var progress = state.fetches[fetch.id],
                progress.generation == generation
            else { return nil }
            // Long fetches allocate their blocks 8 MiB at a time, ahead of
            // the writes (see `ScratchFile.allocate`).
            var allocation: Range<Int64>?
            if state.scratch != nil, end > progress.allocated, progress.upper - offset >= Self.preallocationStep / 8 {
                let upper = min(progress.upper, max(end, offset + Self.preallocationStep))
                allocation = offset..<upper
                progress.allocated = upper
                state.fetches[fetch.id] = progress
            }
            return (state.scratch, allocation)
        }
        guard let (scratch, allocation) = target else { return }
        let bytes = UnsafeRawBufferPointer(rebasing: chunk.bytes[0..<count])
        var written = false
        if let scratch, !disk.isFull {
            // A failure here (no room, no support) shows in the write below.
            if let allocation { try? scratch.allocate(allocation) }
            do {
                try scratch.write(bytes, at: offset)
                written = true
            } catch {
                cacheWriteFailed(error, episode: episode)
            }
        }
        var ready: [(Episode.Waiter, ScratchFile?, [SpillBuffer.Piece])] = []
        let marked: Bool = episode.state.withLock { state in
            guard var progress = state.fetches[fetch.id], progress.generation == state.generation,
                state.generation == generation
            else { return false }
            if written {
                // Bytes written again (a check of a cached byte) change
                // nothing the index must hear of.
                if !state.present.contains(offset..<end) {
                    state.present.insert(offset..<end)
                    state.dirty = true
                }
            } else if !state.handles.isEmpty {
                state.spill.add(bytes, at: offset, limit: tuning.spillLimit, needed: state.waiters.map(\.range))
            }
            progress.cursor = max(progress.cursor, end)
            state.fetches[fetch.id] = progress
            let available = state.available
            state.waiters.removeAll { waiter in
                guard available.contains(waiter.range) else { return false }
                ready.append((waiter, state.scratch, state.spill.pieces(overlapping: waiter.range)))
                return true
            }
            return true
        }
        guard marked else { return }
        if written {
            markDirty(episode)
            if tuning.commitEveryChunk { flush() }
        } else {
            disk.noteSpilled(count, episode: episode)
        }
        for (waiter, scratch, spilled) in ready {
            if spilled.isEmpty {
                // The bytes of this chunk come from memory, which saves
                // reading back what was just written; the rest is on disk.
                answer(waiter, from: chunk, count: count, at: offset, episode: episode)
            } else {
                serve(waiter.range, from: scratch, spilled: spilled, episode: episode, reply: waiter.reply)
            }
        }
    }

    /// Answers a waiter whose bytes are in `chunk` (its first `count` bytes,
    /// which belong at `offset`) or, outside it, present in the scratch file.
    private func answer(_ waiter: Episode.Waiter, from chunk: BodyChunk, count: Int, at offset: Int64, episode: Episode) {
        let range = waiter.range
        let inChunk = max(range.lowerBound, offset)..<min(range.upperBound, offset + Int64(count))
        if inChunk == range {
            let start = Int(range.lowerBound - offset)
            waiter.reply.data(UnsafeRawBufferPointer(rebasing: chunk.bytes[start..<start + Int(range.count)]))
            return
        }
        let scratch = episode.state.withLock { $0.scratch }
        guard let scratch, !inChunk.isEmpty else {
            serve(range, from: scratch, episode: episode, reply: waiter.reply)
            return
        }
        let whole = readBuffers.take(atLeast: Int(range.count))
        defer { readBuffers.give(whole) }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[0..<Int(range.count)])
        do {
            // Before the chunk and after it: on disk already.
            let head = Int(inChunk.lowerBound - range.lowerBound)
            if head > 0 {
                let got = try scratch.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<head]), at: range.lowerBound)
                guard got == head else { throw FileError(operation: "pread", path: scratch.path, errno: 5 /* EIO: the file is shorter than the index says */) }
            }
            let middle = Int(inChunk.count)
            let chunkStart = Int(inChunk.lowerBound - offset)
            UnsafeMutableRawBufferPointer(rebasing: buffer[head..<head + middle])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunk.bytes[chunkStart..<chunkStart + middle]))
            let tail = Int(range.count) - head - middle
            if tail > 0 {
                let got = try scratch.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[(head + middle)...]), at: inChunk.upperBound)
                guard got == tail else { throw FileError(operation: "pread", path: scratch.path, errno: 5 /* EIO: the file is shorter than the index says */) }
            }
            waiter.reply.data(UnsafeRawBufferPointer(buffer))
        } catch {
            logger.error("could not read the cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            waiter.reply.fail(.ioError)
        }
    }

    /// How many bytes a long fetch allocates ahead of its writes.
    private static var preallocationStep: Int64 { 8 * 1024 * 1024 }

    // MARK: - Completion

    /// Called on the network thread when a transfer ended; the completion
    /// runs on the episode's writer, after every chunk queued before it.
    func fetchCompleted(_ fetch: Fetch, error: FetchError?) {
        pendingCompletions.withLock { $0 += 1 }
        writer(for: fetch.episode).async { [self] in
            defer { pendingCompletions.withLock { $0 -= 1 } }
            self.fetch(fetch, completedWith: error)
        }
    }

    /// Ends a fetch: retries a transient failure from where it stopped, or
    /// fails the readers nothing else will serve.
    private func fetch(_ fetch: Fetch, completedWith error: FetchError?) {
        let episode = fetch.episode
        // Counted here for every end: a fetch that is not tried again is
        // forgotten, so the count only matters for one that is.
        let attempt = fetch.nextAttempt()
        let (next, failure) = episode.state.withLock { state in
            state.fetchEnded(id: fetch.id, error: error, attempt: attempt, tuning: tuning)
        }
        switch next {
        case .retry(let range, let validator, let remembered, let attempt, let delay):
            let url = remembered ?? episode.url
            logger.info(
                "retrying a fetch",
                metadata: [
                    "episode.url": .url(url), "range.lower": "\(range.lowerBound)", "attempt": "\(attempt)",
                    "delay.seconds": "\(delay)", "error": "\(failure?.message ?? "")",
                ])
            pendingRetries.withLock { $0 += 1 }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                episode.state.withLock { $0.fetches[fetch.id]?.retrying = false }
                // After shutdown the source refuses at once, and the
                // completion fails the readers before the session goes.
                launch(fetch, url: url, range: range, validator: validator)
                pendingRetries.withLock { $0 -= 1 }
            }
        case .ended:
            if let failure, fetch.isBackground {
                logger.info(
                    "could not check a recently read episode with its origin; its first open will ask again",
                    metadata: ["episode.url": .url(episode.url), "error": "\(failure.message)"])
            } else if let failure {
                logger.error(
                    "could not fetch episode bytes",
                    metadata: ["episode.url": .url(episode.url), "error": "\(failure.message)"])
            }
            settleAfterFetch(episode, fetch: fetch, failure: failure)
        }
    }

    // MARK: - Private helpers

    /// Whether a response shows the origin's bytes differ from the cached ones.
    private func versionChanged(_ state: Episode.State, head: FetchHead, total: Int64) -> Bool {
        OriginVersion(length: state.length, etag: state.etag, lastModified: state.lastModified)
            .isReplaced(by: OriginVersion(length: total, etag: head.etag, lastModified: head.lastModified))
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
    private func settleAfterFetch(_ episode: Episode, fetch: Fetch, failure: FetchError?) {
        let fetchID = fetch.id
        var failedReads: [any DataReplying] = []
        var opens: [(any OpenReplying, OpenOptions?)] = []
        var freshProbe: Probe?
        var early: (reads: [Episode.EarlyRead], sized: [@Sendable () -> Void]) = ([], [])
        episode.state.withLock { state in
            if let after = state.readsAfterProbe, after.fetchID == fetchID {
                early.reads = after.reads
                state.readsAfterProbe = nil
            }
            let stillPending = state.fetches.values.contains { $0.generation == state.generation }
            // The opens wait for the probe; if it ended without a usable head,
            // or every fetch ended, answer them now.
            let probeEnded = state.probeID == fetchID || state.probeID.map { state.fetches[$0] == nil } ?? false
            if !state.validated && (!stillPending || probeEnded) {
                state.probeID = nil
                let usable = state.length != nil && failure?.isUnreachable == true
                if fetch.isBackground, !usable, !state.openWaiters.isEmpty {
                    // Opens joined a mount's check that failed, maybe after
                    // most of its attempts: they get a probe of their own,
                    // with all of them, rather than the check's failure.
                    freshProbe = startProbe(&state, episode: episode)
                } else {
                    for waiter in state.openWaiters {
                        if usable {
                            state.handles[waiter.handle] = Episode.HandleState(generation: state.generation)
                            let options = OpenOptions(
                                handle: waiter.handle, keepCache: !state.kernelPagesStale,
                                dropAttributes: waiter.dropAttributes)
                            opens.append((waiter.reply, options))
                        } else {
                            opens.append((waiter.reply, nil))
                        }
                    }
                    if usable && !state.openWaiters.isEmpty { state.kernelPagesStale = false }
                    state.openWaiters.removeAll()
                    // Their reads are made again: from the cache offline, else
                    // they fail as the open would have.
                    let settled = settleProvisionalHandles(&state)
                    early.reads += settled.reads
                    early.sized = settled.sized
                }
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
        if let freshProbe { send(freshProbe) }
        resume(early, of: episode)
        answerWaitersAtEnd(episode)
    }
}
