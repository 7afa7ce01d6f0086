import RangeCache

/// The response-head event: a response's status, length and validators
/// against what is cached. A changed validator or length drops the cached
/// ranges before any new byte is used (guarantee 3 of docs/DESIGN.md); the
/// size `stat` shows becomes the origin's, from `Content-Range`'s total,
/// never a 206's `Content-Length` (guarantee 4).
extension EpisodeRules.State {
    // MARK: - Nested types

    /// What a response head says of the body, before the cache is asked.
    public enum HeadReading: Equatable, Sendable {
        /// The body's first byte is `start` of an episode of `total` bytes;
        /// `last` is the last byte a 206 announced.
        case body(start: Int64, last: Int64?, total: Int64)
        /// Not an answer with bytes (a status `OriginAnswer` classifies).
        case status
        /// An answer that cannot be used: the fetch fails with `reason`.
        case unusable(reason: String)
    }

    /// How the head was taken.
    public enum HeadVerdict: Equatable, Sendable {
        case accepted
        /// Stale (another version, or a fetch dropped meanwhile): stop it.
        case stale
        /// The version changed: apply again holding the index lock, which
        /// serialises the drop with commits of the old ranges.
        case needsIndexLock
    }

    /// What a head needs to know of the world besides the state.
    public struct HeadContext: Sendable {
        /// Monotonic seconds (`monotonicSeconds()`).
        public var now: Double
        /// The enclosure length the feed claimed.
        public var feedLength: Int64?
        /// Whether the fetch is a mount's check nobody waits for.
        public var isBackground: Bool
        /// Whether the driver holds the index lock.
        public var holdingIndexLock: Bool
        /// The scratch file of a cached version not opened in this mount,
        /// opened by the driver when it holds the index lock: a change frees
        /// its bytes too.
        public var existingScratch: EpisodeRules.FileToken?

        public init(
            now: Double, feedLength: Int64?, isBackground: Bool, holdingIndexLock: Bool,
            existingScratch: EpisodeRules.FileToken? = nil
        ) {
            self.now = now
            self.feedLength = feedLength
            self.isBackground = isBackground
            self.holdingIndexLock = holdingIndexLock
            self.existingScratch = existingScratch
        }
    }

    // MARK: - Static methods

    /// Reads the body's place and the episode's length from `head`, the
    /// answer to a request for bytes from `asked` on: a 206 that starts
    /// anywhere else is not the range asked (a host whose Content-Range
    /// lies would have its bytes cached at the wrong place), and none of
    /// it is taken.
    public static func reading(_ head: FetchHead, asked: Int64) -> HeadReading {
        let read = reading(head)
        if case .body(let start, let last, _) = read, head.status == 206, start != asked {
            return .unusable(
                reason: "the origin answered bytes \(start)-\(last.map(String.init) ?? "") to a request for bytes "
                    + "\(asked)- (its Content-Range is not the range asked); podfs keeps none of it")
        }
        return read
    }

    /// Reads the body's place and the episode's length from `head`.
    public static func reading(_ head: FetchHead) -> HeadReading {
        let missingLength =
            "the origin did not tell the episode's length (no Content-Range total or Content-Length)"
        switch head.status {
        case 206:
            guard let first = head.rangeFirst, let last = head.rangeLast else {
                return .unusable(reason: "the origin answered 206 without a usable Content-Range")
            }
            guard let total = head.total else { return .unusable(reason: missingLength) }
            return .body(start: first, last: last, total: total)
        case 200:
            guard let total = head.contentLength else { return .unusable(reason: missingLength) }
            return .body(start: 0, last: nil, total: total)
        case 416:
            guard let total = head.total else { return .unusable(reason: missingLength) }
            return .body(start: 0, last: nil, total: total)
        default:
            return .status
        }
    }

    // MARK: - Events

    /// A final answer came (a 404, say): forgets the remembered end of the
    /// redirect chain, which may have expired (a signed CDN link), so the
    /// next attempt goes through `enclosureURL` again. Returns whether it
    /// did: the fetch is then worth one more attempt. Not for a final
    /// episode: the enclosure would only lead to another variant, and its
    /// opens are answered from the cache as when offline (`keepsFinal`).
    public mutating func forgetRedirect(enclosureURL: String) -> Bool {
        guard let pinned = effectiveURL, pinned != enclosureURL else { return false }
        // A final episode keeps its link and who sent podfs there in the
        // index (`takeCommitSnapshot`): the next mount must know it too.
        let complete = isComplete
        variant.forgetRoute(final: complete, cached: !present.isEmpty)
        return !complete
    }

    /// Fetch `id`'s response head arrived, with a body at `start` of an
    /// episode of `total` bytes.
    public mutating func head(
        id: UInt64, _ head: FetchHead, start: Int64, last: Int64?, total: Int64, context: HeadContext
    ) -> (verdict: HeadVerdict, transition: Transition) {
        guard var progress = fetches[id], progress.generation == generation else { return (.stale, Transition()) }
        // Stopped until a version change is durable: no byte of it comes.
        guard !stepsUnfinished else {
            fetches[id] = nil
            return (.stale, Transition())
        }
        let answer = OriginVersion(length: total, etag: head.etag, lastModified: head.lastModified)
        let versionKnown = length != nil
        let restarting = restartsStream(id: id)
        let changed =
            version.isReplaced(by: answer) || restarting
            || Self.validatorVanished(was: version, now: answer, confirmedInThisMount: validated)
        if changed, keepsFinal(answerFrom: head.effectiveURL) {
            return (.accepted, Transition(then: keepFinal(id: id, now: context.now)))
        }
        let wholeBody = start == 0 && (head.status == 200 || (last ?? -1) + 1 >= total)
        if unstable == nil, !holdsEveryByte, Self.unproven(answer), !wholeBody {
            return (.accepted, Transition(then: streamInstead(of: id)))
        }
        if changed && !context.holdingIndexLock { return (.needsIndexLock, Transition()) }
        let reason =
            Self.unstableReason(
                was: version, now: answer, confirmedInThisMount: validated, status: head.status,
                askedRange: progress.cursor > 0 || progress.upper < total)
            ?? (Self.unproven(answer) && !holdsEveryByte ? Self.noValidator : nil)
        // Before the version is taken, which answers the opens.
        let sizeOnly = id == sizeCheck && openWaiters.isEmpty && validation.provisional.isEmpty
        let (durable, taken, invalidate, dropped, early) = takeVersion(
            answer, of: head, id: id, total: total, changed: changed, restarting: restarting, sizeOnly: sizeOnly,
            context: context)
        var then = taken
        if id == sizeCheck { sizeCheck = nil }
        // A size check's is said by the sizer, once a show.
        if head.status == 200, progress.cursor > 0 || progress.upper < total, !changed,
            warned.insert(.ignoresRange).inserted, !sizeOnly
        {
            then.append(.logIgnoresRange)
        }
        // A mount's check answered with the whole episode (a new version,
        // or an origin that ignores Range) wants its head only; so does a
        // size check no open joined (`startSizeCheck`).
        let bodyWanted = !(context.isBackground && head.status == 200) && !sizeOnly
        progress.fit(status: head.status, start: start, last: last, total: total, bodyWanted: bodyWanted)
        progress.generation = generation
        // A strong ETag vouches for the bytes; without one, the overlap
        // check does (`overlapMatched`).
        if versionKnown, !changed, reason == nil, let etag = head.etag, !etag.hasPrefix("W/") { current.agree() }
        var streamUnwanted = false
        if let reason, variant.markStitched(reason) {
            then.append(.markUnstable(reason))
            streamUnwanted = !revealsAStream(id: id, start: start, progress: &progress, total: total)
        }
        fetches[id] = progress
        if invalidate { then.append(.invalidateKernel(pages: changed)) }
        then += dropped.failed.map(Effect.fail)
        // Opens wait on while a response on its way may still show a host
        // that stitches per request (`open`); the rest read this version.
        if current.agreed || !awaitingProof { then += answerOpens(dropAttributes: invalidate) }
        then.append(settleAfterHead(early, upper: progress.upper, fetchID: id))
        if !dropped.again.isEmpty { then.append(.resume(reads: dropped.again, sized: [])) }
        then.append(.answerAtEnd)
        if !bodyWanted || streamUnwanted { then.append(.endAfterHead) }
        return (.accepted, Transition(durable: durable, then: then))
    }

    // MARK: - Private methods

    /// What a head that is not stale does to the version: a changed one
    /// drops the old bytes and saves the new validator before anything
    /// else (`durable`); the same one, newly told or at a new link, is
    /// saved with the next commit. The length, validators and link are
    /// taken, and the version confirmed. A size check's (`sizeOnly`) takes
    /// the length and validators only: it neither confirms the version
    /// (the first open asks with a probe of its own, whose response is
    /// the mount's first with bytes, so a new upload in between is a plain
    /// change, not a host that stitches) nor pins the link it came from (a
    /// signed CDN link expires before the episode is read).
    private mutating func takeVersion(
        _ answer: OriginVersion, of head: FetchHead, id: UInt64, total: Int64, changed: Bool, restarting: Bool,
        sizeOnly: Bool, context: HeadContext
    ) -> (durable: [Effect], then: [Effect], invalidate: Bool, dropped: DroppedVersion, early: EpisodeRules.Provisional) {
        var durable: [Effect] = []
        var then: [Effect] = []
        var invalidate = false
        var dropped = DroppedVersion()
        if changed {
            let (cachedBefore, hadBytes) = (present.count, current.hadBytes)
            dropped = dropVersion(keeping: id, existing: context.existingScratch)
            durable.append(.dropIndexRanges)
            if let free = freeingOldBytes(old: length, new: total) { durable.append(free) }
            durable.append(.saveVersion(answer, pinnedURL: head.effectiveURL, pinnedIssuer: head.issuer))
            if pinnedRouteGone {
                then.append(.logVariantGone(dropped: cachedBefore))
            } else if unstable == Self.noValidator, restarting {
                then.append(.logUnproven(dropped: cachedBefore))
            } else if cachedBefore > 0 || hadBytes {
                // Not for a version of which no byte was ever here (one
                // only a size check told): nothing was dropped.
                then.append(.logChanged)
            }
            invalidate = true
        } else if version != answer || (!sizeOnly && (effectiveURL != head.effectiveURL || pinnedIssuer != head.issuer)) {
            // The same variant, newly told or at a link not pinned yet (an
            // index of schema 1): saved with the next commit.
            unsaved.insert(.validators)
            then.append(.saveVersionLater)
        }
        // The enclosure led to a link that answers: said once, if at all.
        variant.routeAnswered()
        // The kernel has seen the size `stat` showed so far; only a
        // different one needs its caches dropped.
        if length != total, (length ?? context.feedLength ?? 0) != total { invalidate = true }
        current.tell(length: total, etag: head.etag, lastModified: head.lastModified)
        if sizeOnly { return (durable, then, invalidate, dropped, validation.probeGone()) }
        variant.pin(head.effectiveURL, issuer: head.issuer)
        let early = validation.confirm(at: context.now)
        return (durable, then, invalidate, dropped, early)
    }

    /// The head of fetch `id` is the first of an episode whose origin
    /// sends no validator, and its body is not the whole episode from byte
    /// 0: no later response could be shown to be its version, so none of
    /// its bytes is used and nothing learns its length. The episode is
    /// marked (`noValidator`) and streamed whole from byte 0 instead, in
    /// one response that is the probe of the opens and reads waiting: its
    /// head tells them the length of the variant they read. A mount's
    /// check nobody waits for only marks the episode.
    private mutating func streamInstead(of id: UInt64) -> [Effect] {
        fetches[id] = nil
        variant.markStitched(Self.noValidator)
        let waiting =
            !openWaiters.isEmpty || !validation.provisional.isEmpty || waiters.contains { $0.generation == generation }
        guard waiting else {
            // Nobody waits: nothing opened early to settle.
            if probeID == id { _ = validation.probeGone() }
            return [.markUnstable(Self.noValidator), .endAfterHead]
        }
        let stream = startProbe(range: 0..<EpisodeRecord.positions.upperBound, minimumFetch: 0)
        variant.streamStarted(stream.id)
        return [.markUnstable(Self.noValidator), .probe(stream), .endAfterHead]
    }

    /// What a dropped version leaves to answer.
    public struct DroppedVersion: Sendable {
        /// Reads of the old version that no byte will answer now.
        var failed: [EpisodeRules.ReadToken] = []
        /// Reads of files that never had a byte of the old version to read:
        /// they read the new one, made again as new reads.
        var again: [EpisodeRules.EarlyRead] = []
    }

    /// A new version: the old one's bytes, waiters and fetches go (all but
    /// fetch `id`). Files open on the old version keep reading its cached
    /// bytes (`retireForOpenFiles`), EIO for the rest; if no byte of it was
    /// ever here, nothing could have been read of it, and they read the
    /// new version instead (an open answered just before the head that
    /// showed a stitching origin, say).
    mutating func dropVersion(keeping id: UInt64, existing: EpisodeRules.FileToken?) -> DroppedVersion {
        kernelPagesStale = true
        if case .notOpen = storage, let existing { storage = .open(existing) }
        retireForOpenFiles()
        let unread = !current.hadBytes && present.isEmpty && spill.isEmpty
        let old = generation
        current.replaced()
        spill.removeAll()
        unsaved.remove(.ranges)
        variant.bytesDropped()
        var dropped = DroppedVersion()
        if unread {
            let new = generation
            for (handle, reader) in handles where reader.generation == old { handles[handle]?.generation = new }
            for waiter in waiters {
                dropped.again.append(EpisodeRules.EarlyRead(
                    handle: waiter.handle, offset: waiter.range.lowerBound, size: waiter.range.count,
                    reply: waiter.reply))
            }
        } else {
            dropped.failed = waiters.map(\.reply)
        }
        waiters.removeAll()
        for (other, _) in fetches where other != id { fetches[other] = nil }
        // The old bytes are freed on disk too, also when the file was not
        // open in this mount (`existing`): the index forgets them, and they
        // would hold disk space it no longer counts.
        return dropped
    }

    /// The opens waiting for this head: they read the current version.
    /// After a change the kernel must drop its pages of the old version
    /// before an open reads: keep_cache off does that at the open, and the
    /// attributes it showed are dropped before it returns.
    mutating func answerOpens(dropAttributes: Bool) -> [Effect] {
        let waiting = validation.takeOpens()
        let opens = waiting.map { waiter in
            handles[waiter.handle] = EpisodeRules.HandleState(generation: generation, opener: waiter.opener)
            let answer = EpisodeRules.OpenAnswer(
                handle: waiter.handle, keepCache: !kernelPagesStale,
                dropAttributes: dropsClaim(waiter) || dropAttributes)
            return Effect.answerOpen(waiter.reply, answer)
        }
        if waiting.contains(where: { $0.opener == .kernel }) { kernelPagesStale = false }
        return opens
    }

    /// Provisional handles read the current version from now on; their
    /// reads within this response are made again now, those beyond it when
    /// the response ends (their own request then finds this connection
    /// free, and the window it opens is sized by the rate this body showed).
    private mutating func settleAfterHead(_ early: EpisodeRules.Provisional, upper: Int64, fetchID: UInt64) -> Effect {
        var (reads, sized) = settle(early)
        let beyond = reads.filter { $0.offset + Int64($0.size) > upper }
        if !beyond.isEmpty {
            reads.removeAll { $0.offset + Int64($0.size) > upper }
            readsAfterFetch[fetchID, default: []].append(contentsOf: beyond)
        }
        return .resume(reads: reads, sized: sized)
    }

    /// The first response arrived (or the probe ended without one): the
    /// files opened `early` read the current version from now on. Returns
    /// the reads and `stat`s that waited for it.
    mutating func settle(
        _ early: EpisodeRules.Provisional
    ) -> (reads: [EpisodeRules.EarlyRead], sized: [EpisodeRules.SizeToken]) {
        for handle in early.handles {
            guard let reader = handles[handle] else { continue }
            handles[handle] = EpisodeRules.HandleState(generation: generation, opener: reader.opener)
        }
        return (early.reads, early.sized)
    }
}

extension EpisodeRules.FetchProgress {
    /// A head with a body at `start` of `total` bytes came: the fetch now
    /// runs from `start` to where the body ends, or stops after its head
    /// (a 416, a body not wanted). A fetch that yielded before its head
    /// wants no more than it kept.
    mutating func fit(status: Int, start: Int64, last: Int64?, total: Int64, bodyWanted: Bool) {
        if status != 206 || start != cursor {
            // Not the range asked: nothing of it is an overlap to hold.
            checkUpTo = 0
            held = Held()
        }
        cursor = start
        received = start
        let asked = upper
        upper = status == 416 || !bodyWanted ? start : (status == 200 ? total : min(total, (last ?? 0) + 1))
        if cutShort, status == 206 { upper = min(upper, max(start, asked)) }
        // What the request, or the fetch it continues, asked up to.
        let wanted = min(max(askedUpTo ?? 0, asked), total)
        askedUpTo = status == 206 && bodyWanted && !cutShort && upper < wanted ? wanted : nil
        if case .awaitingHead = phase { phase = .headArrived }
    }
}
