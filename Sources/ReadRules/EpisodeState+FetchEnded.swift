import RangeCache

/// The fetch-ended events: whether a fetch that stopped is tried again from
/// where it stopped, or ends; then who of those that waited for it is
/// answered, and how. Offline, a cached episode opens from the cache and
/// its cached bytes are served; only uncached bytes fail (guarantee 5 of
/// docs/DESIGN.md).
extension EpisodeRules.State {
    // MARK: - Events

    /// Fetch `id` stopped, with `error` from the transfer (`nil`: the
    /// response ended). `attempt` is the number of attempts made before the
    /// one that just stopped; `tuning` bounds the retries. Returns the
    /// effect (`Effect.retry` or `.settle`) and the failure to report, if
    /// any: a response that ended
    /// short is a failure too, and a `Retry-After` longer than a read may
    /// wait makes a failure final.
    public mutating func fetchEnded(
        id: UInt64, error: FetchError?, attempt: Int, tuning: ReadTuning
    ) -> (Effect, FetchError?) {
        var failure = error
        // A size check ends here, whatever its head did (`streamInstead`
        // forgets the fetch).
        let wasSizeCheck = id == sizeCheck
        if wasSizeCheck { sizeCheck = nil }
        // A fetch the state forgot (stopped, or of a version replaced): its
        // end, a cancelled transfer say, concerns nobody.
        guard var progress = fetches[id] else { return (.settle, nil) }
        if error == nil, progress.generation == generation, progress.cursor >= progress.upper,
            let rest = progress.askedUpTo, rest > progress.upper, !progress.cutShort,
            !(id == streamID && unstable != nil && version.ifRange == nil)
        {
            // The origin answered less than asked and said so (its
            // Content-Range ended there): the rest is asked at once, as a
            // download manager does. No failure: no delay, no attempt. Only
            // what is neither here nor on its way in another fetch of this
            // version (one may have started for it since this answer's head
            // showed where it ended): each byte is asked once.
            var covered = onTheirWay(except: id)
            for range in available.ranges { covered.insert(range) }
            if let gap = covered.gaps(in: progress.upper..<rest).first {
                progress.cursor = gap.lowerBound
                progress.received = gap.lowerBound
                progress.upper = gap.upperBound
                progress.checkUpTo = 0
                progress.held = EpisodeRules.FetchProgress.Held()
                fetches[id] = progress
                return (.launch(range: gap, validator: version.ifRange, url: linkToAsk), nil)
            }
        }
        if progress.cutShort, progress.cursor >= progress.upper {
            // It yielded to a reader's jump and brought all it kept: the
            // transfer was stopped on purpose.
            fetches[id] = nil
            return (.settle, nil)
        }
        if failure == nil, progress.cursor < progress.upper {
            failure = FetchError(
                isTransient: true, isUnreachable: false,
                message: "the origin closed the response \(progress.upper - progress.cursor) bytes early")
        }
        if let asked = failure?.retryAfter, asked > tuning.longestRetryAfter {
            // Waiting that long would hold the reader for minutes, and
            // asking sooner ignores the origin: give up now, saying so.
            failure?.message += "; it asks to be asked again in \(Int(asked.rounded(.up))) s, longer than "
                + "podfs holds a read (\(Int(tuning.longestRetryAfter)) s): read again later"
            failure?.isTransient = false
        }
        // Offline with a cached length: the cache answers, not a retry.
        // Nor is a size check retried: the sizer asks again in its turn.
        if let failure, failure.isTransient, progress.generation == generation, attempt < tuning.attempts, !wasSizeCheck,
            !(failure.isUnreachable && !validated && length != nil)
        {
            // A growing backoff, or as long as the origin asked.
            let delay = max(0.1 * Double(1 << min(attempt, 5)), failure.retryAfter ?? 0)
            let from = resumePoint(of: id, progress: progress)
            let effect = Effect.retry(
                range: from..<progress.upper, validator: version.ifRange, url: linkToAsk,
                attempt: attempt, delay: delay)
            return (effect, failure)
        }
        fetches[id] = nil
        return (.settle, failure)
    }

    /// The delay of fetch `id`'s retry has passed (a "time passed" event):
    /// what it asks for is decided now, not when it stopped, since the
    /// fetch may have yielded to a jump, or the version may have changed,
    /// while it waited. The validator and the link are today's too (a
    /// pinned link forgotten meanwhile is not asked again). Returns
    /// `Effect.launch`, or `.settle` when nothing is left to ask (the fetch
    /// yielded, or the version it fetched was replaced meanwhile).
    public mutating func retryDue(id: UInt64) -> Effect {
        guard let progress = fetches[id] else { return .settle }
        guard progress.generation == generation, progress.cursor < progress.upper else {
            fetches[id] = nil
            return .settle
        }
        return .launch(range: progress.cursor..<progress.upper, validator: version.ifRange, url: linkToAsk)
    }

    /// Fetch `id` ended for good (`failure`: why, if it failed). The opens
    /// waiting for the probe are answered if it ended without a usable head
    /// or every fetch ended: offline from the cache when it has a length,
    /// else EIO. Reads whose missing bytes no fetch will bring fail.
    public mutating func fetchSettled(
        id: UInt64, failure: FetchError?, isBackground: Bool, minimumFetch: Int64
    ) -> [Effect] {
        var opens: [Effect] = []
        var probe: [Effect] = []
        var early: (reads: [EpisodeRules.EarlyRead], sized: [EpisodeRules.SizeToken]) = ([], [])
        early.reads = readsAfterFetch.removeValue(forKey: id) ?? []
        let stillPending = fetches.values.contains { $0.generation == generation }
        // (No closure over `self` here: Swift 6.3's optimiser fails on one
        // in this function, in release builds.)
        var probeEnded = false
        if let probe = probeID { probeEnded = probe == id || fetches[probe] == nil }
        if !validated && (!stillPending || probeEnded) {
            // Offline, the cache answers; so it does when the origin was
            // busy for every attempt (408, 429, 5xx, a dropped connection:
            // it said nothing of the episode changing), and for a final
            // episode whose pinned link stopped working while this probe
            // asked it (`finalLinkGone`): the enclosure would only lead to
            // another variant.
            let busy = failure.map { $0.isTransient || $0.retryAfter != nil } ?? false
            let usable = length != nil && (failure?.isUnreachable == true || busy || finalLinkGone)
            if isBackground, !usable, !openWaiters.isEmpty {
                // Opens joined a mount's check that failed, maybe after most
                // of its attempts: they get a probe of their own, and the
                // files opened early wait on for it.
                probe = [.probe(startProbe(minimumFetch: minimumFetch))]
            } else {
                let openedEarly = validation.probeGone()
                if usable {
                    opens = answerOpens(dropAttributes: false)
                } else {
                    opens = validation.takeOpens().map { .answerOpen($0.reply, nil) }
                }
                // Their reads are made again: from the cache offline, else
                // they fail as the open would have.
                let settled = settle(openedEarly)
                early.reads += settled.reads
                early.sized = settled.sized
            }
        }
        // The read-ahead held until the response before it ended goes now
        // (`heldReadAhead`): before the opens waiting for its proof are
        // judged, and before the fill (a fetch with no head yet would hold
        // it back) and the reads made again, which then find their bytes
        // on their way.
        let ahead = releasedReadAhead()
        if validation.awaitsProof, !awaitingProof {
            // Opens that waited for a head that never came (`open`): the
            // version one response confirmed is what they read.
            opens += answerOpens(dropAttributes: false)
        }
        let pending = onTheirWay()
        let available = available
        var failed: [Effect] = []
        waiters.removeAll { waiter in
            let served = available.gaps(in: waiter.range).allSatisfy { pending.contains($0) }
            if !served { failed.append(.fail(waiter.reply)) }
            return !served
        }
        // The link is this episode's again: the bytes a fetch gave up to a
        // jump come now, after the new place's own fetches, kept apart
        // from other variants as every planned fetch is.
        let fill = guardingVariants(fillFetch().map { [Effect.fetch(id: $0.id, range: $0.range)] } ?? [])
        return opens + failed + probe + ahead + [.resume(reads: early.reads, sized: early.sized), .answerAtEnd] + fill
    }

    /// Reads whose bytes are all here once a head came or a fetch ended:
    /// they are answered now. A safety net: a read is cut to the length at
    /// the read, its bytes answer it as they are written (`bodyWritten`),
    /// and a new version fails or remakes every waiting read
    /// (`dropVersion`), so none should be left. One that asks past the end
    /// cannot be (a debug build stops); a release one cuts it to the end.
    public mutating func readsAtEnd() -> [ReadyRead] {
        guard let length else { return [] }
        let available = available
        var ready: [ReadyRead] = []
        waiters = waiters.compactMap { waiter in
            var waiter = waiter
            assert(waiter.range.upperBound <= length, "a read waits past the episode's end: reads are cut at the read")
            waiter.range = min(waiter.range.lowerBound, length)..<min(waiter.range.upperBound, length)
            guard available.contains(waiter.range) else { return waiter }
            ready.append(ReadyRead(waiter: waiter, scratch: scratch, spilled: spill.pieces(overlapping: waiter.range)))
            return nil
        }
        return ready
    }

    // MARK: - Private methods

    /// Where fetch `id`, stopped at `progress.cursor`, is asked again. The
    /// stream of an unstable episode with no validator for `If-Range` (none
    /// that proves a version: no strong ETag, no strong Last-Modified)
    /// starts again from byte 0: a response from its cursor on could be
    /// another variant, and nothing would show it. Its head then replaces
    /// the part it brought (`restartsStream`), as a second stream's does.
    /// The bytes this version's fetches (but `id`) will still bring.
    private func onTheirWay(except id: UInt64? = nil) -> RangeSet {
        var pending = RangeSet()
        for (other, progress) in fetches where other != id && progress.generation == generation {
            pending.insert(progress.cursor..<max(progress.cursor, progress.bringsUpTo))
        }
        return pending
    }

    private mutating func resumePoint(of id: UInt64, progress: EpisodeRules.FetchProgress) -> Int64 {
        guard id == streamID, unstable != nil, version.ifRange == nil, progress.cursor > 0 else {
            return progress.cursor
        }
        fetches[id] = EpisodeRules.FetchProgress(cursor: 0, upper: progress.upper, generation: progress.generation)
        return 0
    }
}
