import RangeCache

/// Unstable origins are streamed whole (docs/DESIGN.md, "Episodes and their
/// variants"): an episode whose origin serves different bytes per request
/// is fetched as one sequential response, so its bytes are one variant by
/// construction. Reads are answered as the bytes arrive; a read ahead of
/// the stream waits for it.
extension EpisodeRules.State {
    // MARK: - Methods

    /// What every event that plans fetches applies to them before they
    /// leave the rules, so no path can forget it (a read, a recheck, the
    /// keeper's and a scan's fills, the fill after a jump): an episode
    /// marked unstable is streamed whole (`streamingWhole`), and a fetch
    /// that continues bytes of a version no strong ETag vouches for starts
    /// a little before them, to compare (`checkingContinuity`). While a
    /// version change's durable steps are unfinished, nothing is fetched
    /// (`holdingFetchesForSteps`).
    mutating func guardingVariants(_ effects: [Effect]) -> [Effect] {
        checkingContinuity(streamingWhole(holdingFetchesForSteps(effects)))
    }

    // MARK: - Events

    /// Opens an episode marked unstable, or a final one (`isComplete`). A
    /// complete one is served as it is: no request is sent, which for an
    /// unstable origin could only bring another variant (unless its bytes
    /// are `unprovenBytes`: they may be a mix, and are replaced). A
    /// partial one is streamed whole from byte 0, the stream being the
    /// open's probe: its head drops the bytes of the old variant (durably,
    /// as a version change) and answers the open on the new one, so the
    /// file never reads a byte of another variant and never gets EIO.
    mutating func openStreamed(_ opening: EpisodeRules.OpenWaiter) -> [Effect] {
        if let length, (present.contains(0..<length) && !unprovenBytes) || (streamOnItsWay && probeID == nil) {
            return [openNow(opening)]
        }
        validation.wait(opening)
        if streamOnItsWay { return [] }
        let probe = startProbe(range: 0..<EpisodeRecord.positions.upperBound, minimumFetch: 0)
        variant.streamStarted(probe.id)
        return [.probe(probe)]
    }

    /// Whether the head of fetch `id` starts an unstable episode's stream
    /// over bytes of another variant: they go, as for a version change.
    func restartsStream(id: UInt64) -> Bool {
        guard unstable != nil, id == streamID, let progress = fetches[id], progress.cursor == 0, let length else {
            return false
        }
        return !present.isEmpty && (unprovenBytes || !present.contains(0..<length))
    }

    /// The delay of a `.recheck` passed on an unstable episode: reads wait
    /// for its stream. When the stream has been silent so long that a
    /// second whole stream, from byte 0, would bring a waiting read's bytes
    /// sooner (`JoinOrJump`, with the stream's silence), the second one
    /// starts and the first stops. Its head then replaces the variant
    /// (`restartsStream`): files open on the first one keep what was cached
    /// of it and get EIO past it, as when a variant's link is gone; a new
    /// open reads the second. Armed again while reads wait on a flowing
    /// stream.
    mutating func secondStreamIfSooner(context: ReadContext) -> [Effect] {
        guard let length, let streamID, let stream = fetches[streamID], stream.generation == generation,
            stream.cursor < stream.upper
        else { return [] }
        let waiting = waiters.filter { $0.generation == generation }
        guard !waiting.isEmpty else { return [] }
        let rearm = armRecheck(need: waiting.map { Int64($0.range.count) }.max() ?? 0, context: context)
        // A stream that has brought nothing yet is left to the connection's
        // own timeouts and retries; it is judged once it flows.
        guard let lastArrival = stream.lastArrival else { return [rearm] }
        let link = context.link
        // A host whose shows stitch is read only by whole streams, which
        // tell its rate (`LinkEstimates`) only when they end: until then a
        // second stream is judged at the rate this one had while it flowed.
        let rate = link.throughput ?? stream.flowingRate
        let sooner = waiting.contains { waiter in
            JoinOrJump.secondStreamSooner(
                position: waiter.range.lowerBound, received: stream.received, need: Int64(waiter.range.count),
                streamRate: stream.rate(link: link, now: context.now),
                silence: context.now - lastArrival, rate: rate,
                roundTrip: link.latency)
        }
        guard sooner else { return [rearm] }
        recheckArmed = false
        fetches[streamID] = nil
        let id = takeFetchID()
        let upper = streamEnd(length: length)
        fetches[id] = EpisodeRules.FetchProgress(cursor: 0, upper: upper, generation: generation)
        variant.streamStarted(id)
        return [.stop(id: streamID), .fetch(id: id, range: 0..<upper)]
    }

    /// The head of fetch `id` (body at `start` of `total` bytes, up to
    /// `progress.upper`) just showed the origin serves different bytes per
    /// request. A body from byte 0 to the end is one variant whole: it
    /// becomes the episode's stream, and fetches planned before yield to
    /// it (each would bring yet another variant). Any other body would be
    /// bytes of a variant no stream continues: it stops at its head, and
    /// the next read streams the episode from byte 0. Returns whether the
    /// body is wanted.
    mutating func revealsAStream(id: UInt64, start: Int64, progress: inout EpisodeRules.FetchProgress, total: Int64) -> Bool {
        guard start == 0, progress.upper >= total else {
            progress.upper = start
            return false
        }
        variant.streamStarted(id)
        for other in fetches.keys where other != id { fetches[other] = nil }
        return true
    }

    // MARK: - Private methods

    /// For an episode marked unstable, replaces the fetches `effects` plan
    /// by one stream: from the end of the cached bytes that start at byte 0
    /// to the end of the episode, started once; reads wait for it. Other
    /// episodes' effects pass unchanged. Without a validator for
    /// `If-Range` nothing shows that a stream continues the cached bytes'
    /// version: it starts at byte 0 and asks to the end whatever the
    /// length (its head drops a cached part, `restartsStream`).
    /// The stream itself (a second one, `secondStreamIfSooner`) passes.
    private mutating func streamingWhole(_ effects: [Effect]) -> [Effect] {
        guard unstable != nil, let length else { return effects }
        var kept: [Effect] = []
        var wanted = false
        for effect in effects {
            if case .fetch(let id, _) = effect, id != streamID {
                fetches[id] = nil
                wanted = true
            } else {
                kept.append(effect)
            }
        }
        guard wanted, !streamOnItsWay else { return kept }
        let start = version.ifRange != nil ? present.coveredPrefix(from: 0) : 0
        guard start < length, !holdsEveryByte else { return kept }
        let upper = streamEnd(length: length)
        let id = takeFetchID()
        fetches[id] = EpisodeRules.FetchProgress(cursor: start, upper: upper, generation: generation)
        variant.streamStarted(id)
        return [.fetch(id: id, range: start..<upper)] + kept
    }

    /// Widens each fetch in `effects` that continues bytes cached or on
    /// their way to start up to `overlapBytes` before them, for an episode
    /// without a strong ETag. Those bytes are held as they arrive and
    /// compared with the ones on disk (`hold`, `takeComparableOverlaps`).
    /// A strong ETag sent in `If-Range` vouches for the bytes instead (an
    /// origin that answered the range with it serves the same variant), so
    /// an honest origin is never asked for a byte twice (guarantee 2).
    private mutating func checkingContinuity(_ effects: [Effect]) -> [Effect] {
        effects.map { effect in
            guard case .fetch(let id, let range) = effect, range.lowerBound > 0, var progress = fetches[id],
                progress.cursor == range.lowerBound, let floor = continuedFrom(range.lowerBound, excluding: id)
            else { return effect }
            let start = max(floor, range.lowerBound - Self.overlapBytes)
            progress.cursor = start
            progress.received = start
            progress.checkUpTo = range.lowerBound
            fetches[id] = progress
            return .fetch(id: id, range: start..<range.upperBound)
        }
    }

    // MARK: - Private properties

    /// Where a whole stream asks to end: at `length` when `If-Range`
    /// vouches for the version; without a validator, at any length (the
    /// variant it brings may be longer), its head telling the real end.
    private func streamEnd(length: Int64) -> Int64 {
        version.ifRange != nil ? length : EpisodeRecord.positions.upperBound
    }

    /// Whether this version's stream is still on its way.
    private var streamOnItsWay: Bool {
        guard let streamID, let progress = fetches[streamID] else { return false }
        return progress.generation == generation && progress.cursor < progress.upper
    }

    /// Where the bytes just before `offset` begin, when a fetch at `offset`
    /// continues them (cached bytes, or a fetch of this version on its way
    /// that ends there) and the episode has no strong ETag.
    private func continuedFrom(_ offset: Int64, excluding id: UInt64) -> Int64? {
        if let etag, !etag.hasPrefix("W/") { return nil }
        if let run = present.ranges.first(where: { $0.upperBound == offset }) { return run.lowerBound }
        for (other, progress) in fetches where other != id && progress.generation == generation {
            if progress.cursor < offset && progress.upper == offset { return progress.cursor }
        }
        return nil
    }
}
