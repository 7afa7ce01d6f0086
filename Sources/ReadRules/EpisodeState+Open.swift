import RangeCache

/// The open, release and probe events. The first open of an episode in a
/// mount, and the first after `revalidateAfter`, asks the origin (with
/// `If-Range`) so the size is real and a changed episode is noticed
/// (guarantees 3 and 4 of docs/DESIGN.md); the answer comes with the
/// response head, or at once when the episode was confirmed recently.
extension EpisodeRules.State {
    // MARK: - Nested types

    /// A probe to send: fetch `id` of `range`, registered in `fetches`.
    public struct ProbeStart: Sendable {
        public internal(set) var id: UInt64
        public internal(set) var range: Range<Int64>
        /// The validator for `If-Range`.
        public internal(set) var validator: String?
        /// The remembered end of the redirect chain, else the link a
        /// refresh moved the episode to, if any (`linkToAsk`).
        public internal(set) var url: String?
    }

    // MARK: - Events

    /// Open `handle`, at `now` (monotonic seconds). An episode with nothing
    /// cached opens at once while its probe is on its way: no byte could be
    /// served stale, so its reads (and `stat`s) wait for the response, and
    /// the first byte comes a round trip sooner. Offline, a cached episode
    /// opens from the cache when the probe fails (`fetchSettled`).
    ///
    /// `seenByKernel` false: an open of the cache's own (the keeper's, a
    /// scan's fetch ahead), whose `keep_cache` the kernel never sees.
    public mutating func open(
        handle: UInt64, reply: EpisodeRules.OpenToken, now: Double, feedLength: Int64?, tuning: ReadTuning,
        seenByKernel: Bool = true
    ) -> [Effect] {
        claim = .opened(keptUntil: claim.keptUntil)
        let opening = EpisodeRules.OpenWaiter(
            reply: reply, handle: handle, openedAt: now, opener: seenByKernel ? .kernel : .cache)
        // Stopped until a version change is durable (`stepsFailed`).
        if stepsUnfinished { return [.answerOpen(reply, nil)] }
        if unstable != nil || finalLinkGone { return openStreamed(opening) }
        if validated, let at = validatedAt, now - at < tuning.revalidateAfter {
            if !current.agreed, awaitingProof {
                // One response told the version and the next, on its way,
                // will show whether the origin serves the same bytes: if it
                // stitches per request, this file opens on what comes next,
                // not on a variant about to go.
                validation.wait(opening)
                return []
            }
            return [openNow(opening)]
        }
        // Confirmed before in this mount, but longer ago than the TTL: ask
        // again with a probe of its own (a fetch already on its way was
        // sent before, and one streaming has had its head).
        let revalidating = validated
        validation.lapse()
        if let opened = openFromTheCache(opening) { return opened }
        if !revalidating, present.isEmpty, spill.isEmpty, openWaiters.isEmpty, fetches.isEmpty || probeID != nil,
            (feedLength ?? 0) > 0
        {
            // Nothing cached: open now (keep_cache off all the same). Only
            // with a size from the feed: a file the kernel thinks empty
            // would read as empty, not fail, if the probe failed.
            let probe = probeID == nil ? [Effect.probe(startProbe(minimumFetch: tuning.minimumFetch))] : []
            handles[handle] = EpisodeRules.HandleState(generation: generation, opener: opening.opener)
            validation.openedEarly(handle)
            let answer = Effect.answerOpen(
                reply,
                EpisodeRules.OpenAnswer(handle: handle, keepCache: false, dropAttributes: dropsClaim(opening)))
            return [answer] + probe
        }
        validation.wait(opening)
        // A probe is already on its way, or another fetch whose head has
        // not come: its head answers this open. (One that streams has had
        // its head, and would not: this open asks with a probe of its own.)
        let headOnItsWay = fetches.values.contains { $0.generation == generation && !$0.headArrived }
        if probeID != nil || (!revalidating && headOnItsWay) { return [] }
        return [.probe(startProbe(minimumFetch: tuning.minimumFetch))]
    }

    /// Forgets open file `handle` at `now`: a sequential reader's place is
    /// kept a while for a reopen that reads on. Returns the replaced
    /// versions no open file reads now, to be closed outside the lock.
    public mutating func release(handle: UInt64, now: Double) -> [EpisodeRules.RetiredVersion] {
        validation.released(handle)
        if let closing = handles.removeValue(forKey: handle), ReadPlan.readsOn(streak: closing.streak),
            closing.generation == generation
        {
            lastStream = (closing.nextOffset, closing.streak, now)
        }
        // Bytes kept in memory were for open files only.
        if handles.isEmpty {
            spill.removeAll()
            closings &+= 1
        }
        return forgetUnreadVersions()
    }

    /// A `stat` of the episode: `true` when it must wait for the first
    /// response (a provisional file is open; `answer` is then kept and
    /// answered when the response comes), `false` to answer now.
    public mutating func statWaits(_ answer: @autoclosure () -> EpisodeRules.SizeToken) -> Bool {
        validation.statEarly(answer())
    }

    /// Registers the open's probe: the first missing bytes (or one byte),
    /// whose head confirms the size and version and whose body answers
    /// readers as it arrives; or `range` for a mount's check.
    mutating func startProbe(range: Range<Int64>? = nil, minimumFetch: Int64) -> ProbeStart {
        let range = range ?? probeRange(minimumFetch: minimumFetch)
        let id = takeFetchID()
        fetches[id] = EpisodeRules.FetchProgress(
            cursor: range.lowerBound, upper: range.upperBound, generation: generation, role: .answersOnArrival)
        validation.ask(probe: id)
        return ProbeStart(id: id, range: range, validator: version.ifRange, url: linkToAsk)
    }

    /// A mount's check of a recently read episode (one byte, `If-Range`):
    /// `nil` when the episode is confirmed, checked, busy or not cached.
    public mutating func startMountCheck() -> ProbeStart? {
        // An unstable origin's answer would be another variant: nothing to
        // check against (`openStreamed`).
        // Nor a final episode whose link stopped working: the enclosure
        // would only lead to another variant (`finalLinkGone`).
        guard unstable == nil, !finalLinkGone, !validated, probeID == nil, fetches.isEmpty, openWaiters.isEmpty,
            let length, length > 0
        else {
            return nil
        }
        // The first byte not cached, so no byte crosses the network twice;
        // of a whole episode, its first (as an open asks).
        let first = present.gaps(in: 0..<length).first?.lowerBound ?? 0
        return startProbe(range: first..<first + 1, minimumFetch: 1)
    }

    /// A check of an episode whose size nobody has told: its feed gives no
    /// length and the origin was never asked (docs/DESIGN.md, "Real
    /// sizes"). It asks for the first byte; its head tells the length and
    /// validators, so a `stat` shows the real size before anything opens
    /// the file, and it keeps no byte (`head`): one byte's overlap would
    /// "prove" a host that stitches per request behind a weak validator
    /// serves one variant, where the first read's response is the first
    /// with bytes, as for an episode never checked. `nil` when the length
    /// is known, the host stitches per request or proves nothing (its
    /// answer would be one variant's), or anything is open, waiting or on
    /// its way (an open's own probe tells the size).
    public mutating func startSizeCheck() -> ProbeStart? {
        guard length == nil, unstable == nil, !finalLinkGone, probeID == nil, fetches.isEmpty, openWaiters.isEmpty,
            handles.isEmpty
        else {
            return nil
        }
        let probe = startProbe(range: 0..<1, minimumFetch: 1)
        sizeCheck = probe.id
        return probe
    }

    /// The size a `stat` shows and for how long the kernel may keep it: the
    /// origin's size for `timeout`; the feed's claim for `timeout` too
    /// until the episode is opened (nothing can contradict it before), then
    /// for 0 s, so every read past it and every `stat` asks again.
    public mutating func sizeShown(feedLength: Int64?, timeout: Double, now: Double) -> (size: Int64, timeout: Double) {
        if let length { return (length, timeout) }
        guard case .shown(let keptUntil) = claim else { return (feedLength ?? 0, 0) }
        // A second more: the kernel starts its clock when the answer
        // reaches it, a little after this.
        claim = .shown(keptUntil: max(keptUntil, now + timeout + 1))
        return (feedLength ?? 0, timeout)
    }

    /// Whether the episode's cached bytes may be evicted: not while it is
    /// open, opening or downloading. The driver asks, and if they may,
    /// drops the index's ranges and deletes the file with the state still
    /// locked (so no open can start writing to the file in between), then
    /// tells `evicted()` if that succeeded.
    public var mayEvict: Bool {
        handles.isEmpty && openWaiters.isEmpty && fetches.isEmpty
    }

    /// A program has it open, or is opening it (not the cache's own
    /// opens: a keeper's download, a scan's fetch ahead).
    public var openByAReader: Bool {
        handles.values.contains { $0.opener == .kernel } || openWaiters.contains { $0.opener == .kernel }
    }

    /// The index forgot the episode's ranges and its file is gone: the
    /// state forgets its bytes.
    public mutating func evicted() {
        current.forgetBytes()
        spill.removeAll()
        unsaved.remove(.ranges)
        storage = .notOpen
        variant.bytesDropped()
    }

    /// A response on its way will show whether the origin serves the same
    /// bytes to each request: its head has not come, or its overlap has
    /// not been compared yet (`checkingContinuity`); or a read-ahead held
    /// until the response before it ends will ask (`heldReadAhead`).
    var awaitingProof: Bool {
        if let held = heldReadAhead, held.generation == generation { return true }
        return fetches.values.contains { progress in
            progress.generation == generation
                && (!progress.headArrived || progress.checkUpTo > progress.cursor
                    || !progress.held.bytes.isEmpty)
        }
    }

    // MARK: - Internal methods

    /// Opens `opening` on the current version at once: the answer, keeping
    /// the kernel's pages unless a replaced version may have left some
    /// there; an open the kernel sees clears that. `dropAttributes`: the
    /// kernel drops what it holds of the episode's attributes first (the
    /// size changed), as it does for a claim it may keep (`dropsClaim`).
    mutating func openNow(_ opening: EpisodeRules.OpenWaiter, dropAttributes: Bool = false) -> Effect {
        handles[opening.handle] = EpisodeRules.HandleState(generation: generation, opener: opening.opener)
        defer { if opening.opener == .kernel { kernelPagesStale = false } }
        let answer = EpisodeRules.OpenAnswer(
            handle: opening.handle, keepCache: !kernelPagesStale,
            dropAttributes: dropAttributes || dropsClaim(opening))
        return .answerOpen(opening.reply, answer)
    }

    /// Whether `opening` must first drop the attributes the kernel keeps,
    /// a claim shown before (`EpisodeRules.Claim`): opened before the
    /// kernel's time to keep it ran out. The claim's time no longer moves
    /// once the episode is opened, so this is what it was at the open.
    func dropsClaim(_ opening: EpisodeRules.OpenWaiter) -> Bool {
        opening.openedAt < claim.keptUntil
    }

    // MARK: - Private methods

    /// Opens an episode whose head and tail are cached at once, on the
    /// cached version (docs/DESIGN.md, "Who reads"): a scanner's open on a
    /// remount, which reads there, waits for no round trip. Whether the
    /// origin changed it is asked in the background (one byte with
    /// `If-Range`); every byte served meanwhile is of the cached version,
    /// a read of bytes not cached asks with `If-Range` too, and if the
    /// episode changed, the file reads what was cached and gets EIO past
    /// it (`RetiredVersion`), as an open file does. A listener's partly
    /// cached episode (its tail not cached) waits as before, so a variant
    /// whose signed link expired is replaced before it reads a byte.
    /// `nil`: the head or the tail is not cached, or the length is not known.
    private mutating func openFromTheCache(_ opening: EpisodeRules.OpenWaiter) -> [Effect]? {
        guard let length, length > 0, present.contains(0..<1), present.contains(length - 1..<length),
            openWaiters.isEmpty, !replacingScratch
        else { return nil }
        let answer = openNow(opening)
        guard probeID == nil else { return [answer] }
        let first = present.gaps(in: 0..<length).first?.lowerBound ?? 0
        return [answer, .check(startProbe(range: first..<first + 1, minimumFetch: 1))]
    }

    /// What the first response of a mount should fetch: the first bytes
    /// neither here nor on their way (useful anyway; not those of a stream
    /// on its way, which a lapsed confirmation's probe would ask for twice),
    /// or one byte when all are.
    private func probeRange(minimumFetch: Int64) -> Range<Int64> {
        guard let length else { return 0..<minimumFetch }
        guard length > 0 else { return 0..<1 }
        if let gap = uncoveredGaps(in: 0..<length).first {
            return gap.lowerBound..<min(gap.upperBound, gap.lowerBound + minimumFetch)
        }
        return 0..<1
    }
}
