import RangeCache

/// The read event: which bytes a read is answered with, which fetches it
/// starts, and where it waits. Each byte is asked of the origin by at most
/// one fetch at a time, however many reads overlap (guarantee 2 of
/// docs/DESIGN.md): a read joins the fetches already on their way that
/// bring its bytes sooner than a request of its own (`JoinOrJump`), and
/// fetches only the gaps between them.
extension EpisodeRules.State {
    // MARK: - Nested types

    /// What a read needs to know of the world besides the state.
    public struct ReadContext: Sendable {
        /// Monotonic seconds (`monotonicSeconds()`).
        public var now: Double
        /// Seconds since the epoch, for `lastRead`.
        public var wallClock: Int64
        public var link: LinkEstimate
        public var tuning: ReadTuning

        public init(now: Double, wallClock: Int64, link: LinkEstimate, tuning: ReadTuning) {
            self.now = now
            self.wallClock = wallClock
            self.link = link
            self.tuning = tuning
        }

        /// The read-ahead window of a reader `streak` reads in order.
        func window(streak: Int) -> Int64 {
            ReadPlan.window(streak: streak, link: link, tuning: tuning)
        }
    }

    // MARK: - Events

    /// A read of `size` bytes at `offset` by open file `handle`. Registers
    /// the fetches it needs and, if its bytes are not all here, the reply
    /// as a waiter; answered with fewer bytes only at the end. Its fetches
    /// keep variants apart (`guardingVariants`).
    public mutating func read(
        handle: UInt64, offset: Int64, size: Int, reply: EpisodeRules.ReadToken, context: ReadContext
    ) -> [Effect] {
        if readStopped(handle: handle) { return [.fail(reply)] }
        return guardingVariants(planRead(handle: handle, offset: offset, size: size, reply: reply, context: context))
    }

    /// The delay of a `.recheck` passed (`rechecking`), its fetches
    /// keeping variants apart (`guardingVariants`).
    public mutating func recheckDue(context: ReadContext) -> [Effect] {
        guardingVariants(rechecking(context: context))
    }

    // MARK: - Private methods

    /// What `read` plans, before `guardingVariants`.
    private mutating func planRead(
        handle: UInt64, offset: Int64, size: Int, reply: EpisodeRules.ReadToken, context: ReadContext
    ) -> [Effect] {
        guard let reader = handles[handle] else { return [.fail(reply)] }
        // Opened before the first response: wait for it.
        if validation.readEarly(EpisodeRules.EarlyRead(handle: handle, offset: offset, size: size, reply: reply)) {
            return []
        }
        // The origin changed since this file was opened: serving the rest
        // from the new version would mix two versions.
        if reader.generation != generation { return readRetired(reader, offset: offset, size: size, reply: reply) }
        guard let length else { return [.fail(reply)] }
        let end = ReadPlan.end(offset: offset, size: size, length: length)
        lastRead = context.wallClock
        let windowOf = context.window(streak:)
        let follow = ReadPlan.follow(
            reader, offset: offset, end: end, lastStream: lastStream, now: context.now, window: windowOf)
        var followed = follow.reader
        followed.extent.note(offset: offset, end: end, length: length, head: context.tuning.head)
        // A seek within the streak's reach keeps the streak (the window
        // stays large once the reader reads on there), but it is a jump:
        // its fetch is a jump's, answered as its bytes arrive, with no
        // read-ahead yet to share the link with, and it joins a stream only
        // when that brings its bytes sooner (`JoinOrJump`).
        let fresh = reader.streak == 0 && reader.nextOffset == 0
        let readsOn = follow.resumed || (fresh ? offset == 0 : follow.readsOn)
        let jumped = !fresh && !readsOn
        if offset >= end {
            handles[handle] = followed
            return [.answerEmpty(reply)]
        }
        let wanted = offset..<end
        if !jumped, let earlier = unprovenFetchStillBringing(), !uncoveredGaps(in: wanted).isEmpty {
            // A reader reading on past what the version's one response
            // brings: made again when that ends (`unprovenFetchStillBringing`),
            // as the same read, so the file's streak is kept.
            readsAfterFetch[earlier, default: []].append(
                EpisodeRules.EarlyRead(handle: handle, offset: offset, size: size, reply: reply))
            return []
        }
        if follow.resumed { lastStream = nil }
        handles[handle] = followed
        let window = windowOf(jumped ? 0 : followed.streak)
        let reach = context.tuning.reach(
            ofReadEndingAt: end, length: length, farAndFast: ReadPlan.isFarAndFast(link: context.link, tuning: context.tuning))
        var effects: [Effect] = []
        if follow.moved, !fresh, unstable == nil, handles.count == 1 {
            // The listener is at a new place: what its old place's
            // read-ahead still brings must not share the link with it.
            // Only when it reads alone: readers that share the kernel's
            // page cache skip what another brought in, which looks like a
            // move, and cutting their streams cost the origin 1.2 x the
            // size for 8 readers (bench/run).
            effects += yieldLeftBehind(by: handle, wanted: wanted, window: windowOf).map { Effect.stop(id: $0) }
        }
        if !available.contains(wanted) {
            effects += wait(
                for: wanted, reply: reply, handle: handle, readsOn: readsOn, window: window, reach: reach,
                length: length, context: context)
        }
        if ReadPlan.readsOn(streak: followed.streak), !jumped {
            effects += readAhead(for: handle, after: end, window: window, reach: reach, context: context)
        }
        if available.contains(wanted) {
            effects.append(.serve(reply, wanted, spilled: spill.pieces(overlapping: wanted)))
        }
        return effects
    }

    /// The delay of a `.recheck` passed: each read that jumped and still
    /// waits for a fetch not its own is judged again as a new read would
    /// be (`yieldToJump`, with the silence since the fetch last brought a
    /// byte, or since the read began to wait). A fetch that lost yields,
    /// and the read gets a fetch of its own. Armed again while such reads
    /// wait. On an unstable origin, its one stream is its variant: only a
    /// second whole stream can be sooner (`secondStreamIfSooner`).
    private mutating func rechecking(context: ReadContext) -> [Effect] {
        recheckArmed = false
        if unstable != nil { return secondStreamIfSooner(context: context) }
        guard let length else { return [] }
        let windowOf = context.window(streak:)
        let deferredBefore = deferred
        var effects: [Effect] = []
        for index in waiters.indices where waiters[index].generation == generation {
            guard let since = waiters[index].jumpedSince else { continue }
            // Judged as a new read: its own wait does not keep the fetch
            // it may leave going (`yield`).
            let waiter = waiters.remove(at: index)
            let stopped = yieldToJump(
                wanted: waiter.range, handle: waiter.handle, following: false, link: context.link, now: context.now,
                since: since, window: windowOf)
            waiters.insert(waiter, at: index)
            effects += stopped.map { Effect.stop(id: $0) }
        }
        if deferred != deferredBefore {
            effects += fetchesForOrphanedWaiters(window: windowOf(0), length: length, tuning: context.tuning)
        }
        let waiting = waiters.filter {
            $0.generation == generation && $0.jumpedSince != nil && waitsOnAStream($0.range)
        }
        if let need = waiting.map({ Int64($0.range.count) }).max() {
            effects.append(armRecheck(need: need, context: context))
        }
        return effects
    }

    /// A read whose bytes are not all here waits for them: a fetch that
    /// would bring them later than a request of their own yields first,
    /// the gaps no fetch brings are fetched, and a read that joined a
    /// stream is judged again if that stalls.
    private mutating func wait(
        for wanted: Range<Int64>, reply: EpisodeRules.ReadToken, handle: UInt64, readsOn: Bool, window: Int64,
        reach: Int64, length: Int64, context: ReadContext
    ) -> [Effect] {
        var effects: [Effect] = []
        let windowOf = context.window(streak:)
        // A fetch that would bring these bytes later than a request of
        // their own yields first (`JoinOrJump`, `yield`). Not on an
        // unstable origin: its stream is the episode's one variant, and
        // a request of the read's own would bring another
        // (`streamingWhole`).
        let deferredBefore = deferred
        if unstable == nil {
            let stopped = yieldToJump(
                wanted: wanted, handle: handle, following: readsOn, link: context.link, now: context.now,
                since: context.now, window: windowOf)
            effects += stopped.map { Effect.stop(id: $0) }
        }
        for gap in uncoveredGaps(in: wanted) {
            effects.append(planFetch(from: gap, window: window, length: reach, tuning: context.tuning))
        }
        waiters.append(
            EpisodeRules.Waiter(
                range: wanted, reply: reply, generation: generation, handle: handle,
                stance: readsOn ? .following : .jumped(since: context.now)))
        if deferred != deferredBefore {
            // A fetch was cut at this read's place: bytes other reads
            // wait for past that place come by a fetch of their own,
            // not by the deferred fill (which waits for a quiet link).
            effects += fetchesForOrphanedWaiters(window: window, length: length, tuning: context.tuning)
        }
        if !readsOn, unstable == nil, !recheckArmed, waitsOnAStream(wanted) {
            // It joined a stream: if that stalls before it brings
            // these bytes, the read is judged again.
            effects.append(armRecheck(need: Int64(wanted.count), context: context))
        } else if unstable != nil, !recheckArmed {
            // It waits for the unstable episode's one stream: if that
            // stalls, a second one may be sooner (`secondStreamIfSooner`).
            effects.append(armRecheck(need: Int64(wanted.count), context: context))
        }
        return effects
    }

    /// The `.recheck` for reads waiting for `need` bytes at most, armed.
    mutating func armRecheck(need: Int64, context: ReadContext) -> Effect {
        recheckArmed = true
        return .recheck(
            after: JoinOrJump.recheckDelay(need: need, rate: context.link.throughput, roundTrip: context.link.latency))
    }

    /// Fetches for the bytes waiting reads need that neither are here nor
    /// are on their way any more (a fetch that yielded was cut before them).
    private mutating func fetchesForOrphanedWaiters(
        window: Int64, length: Int64, tuning: ReadTuning
    ) -> [Effect] {
        var effects: [Effect] = []
        for waiter in waiters where waiter.generation == generation {
            // `uncoveredGaps` sees each fetch planned here as on its way.
            while let gap = uncoveredGaps(in: waiter.range).first {
                effects.append(planFetch(from: gap, window: window, length: length, tuning: tuning))
            }
        }
        return effects
    }

    /// Gaps of `wanted` that are neither here nor on their way.
    func uncoveredGaps(in wanted: Range<Int64>) -> [Range<Int64>] {
        let pending = pending
        return available.gaps(in: wanted).flatMap { pending.gaps(in: $0) }
    }

    /// Registers a fetch starting at `gap`'s start, widened to `window` but
    /// never over bytes already here or already on their way.
    mutating func planFetch(
        from gap: Range<Int64>, window: Int64, length: Int64, tuning: ReadTuning
    ) -> Effect {
        var upper = ReadPlan.widenedEnd(of: gap, window: window, length: length)
        if let next = available.ranges.first(where: { $0.lowerBound > gap.lowerBound }) {
            upper = min(upper, next.lowerBound)
        }
        for progress in fetches.values where progress.generation == generation {
            if progress.cursor > gap.lowerBound { upper = min(upper, progress.cursor) }
        }
        upper = max(upper, gap.upperBound)
        let id = takeFetchID()
        fetches[id] = EpisodeRules.FetchProgress(
            cursor: gap.lowerBound, upper: upper, generation: generation,
            role: upper - gap.lowerBound <= tuning.minimumFetch ? .answersOnArrival : .readAhead)
        return .fetch(id: id, range: gap.lowerBound..<upper)
    }

    /// Until two responses agreed on the version (`Version.agreed`), a
    /// fetch of it whose head came and whose bytes are not all on disk
    /// yet: no other request goes out meanwhile. The next head may show a
    /// host that stitches per request, and the version it drops takes
    /// with it the bytes this fetch is still bringing, which a file open
    /// on it may be reading: that file would fail within the very bytes
    /// the response it opened on was sending (a busy machine, a slow link).
    /// Costs a round trip, once an episode a mount.
    func unprovenFetchStillBringing() -> UInt64? {
        guard !current.agreed else { return nil }
        return fetches.first { _, progress in
            progress.generation == generation && progress.headArrived && progress.cursor < progress.upper
        }?.key
    }

    /// The read-ahead held while a response of a version not agreed yet
    /// brought its bytes (`heldReadAhead`), once none does, unless its file
    /// moved since (it would race the file's jump). Also when the file
    /// closed meanwhile (a reader of the head, whose last read the end of
    /// that response answered): its head is the proof the next open waits
    /// for, which opens on a variant about to go without it.
    mutating func releasedReadAhead() -> [Effect] {
        guard let held = heldReadAhead, unprovenFetchStillBringing() == nil else { return [] }
        heldReadAhead = nil
        guard held.generation == generation, handles[held.handle].map({ $0.nextOffset == held.end }) ?? true
        else { return [] }
        return guardingVariants(
            readAhead(for: held.handle, after: held.end, window: held.window, reach: held.reach, context: held.context))
    }

    /// Bytes after `end` that fetches of this version are still to bring
    /// from the network.
    private func arrivingBytes(after end: Int64) -> Int64 {
        var total: Int64 = 0
        for progress in fetches.values where progress.generation == generation {
            total = total.saturatingAdding(max(0, progress.upper - max(progress.received, end)))
        }
        return total
    }

    /// Keeps a sequential reader's (open file `handle`'s) next `window`
    /// bytes on their way, none past `reach` (`ReadTuning.reach`).
    private mutating func readAhead(
        for handle: UInt64, after end: Int64, window: Int64, reach: Int64, context: ReadContext
    ) -> [Effect] {
        // The frontier: where bytes stop being here or on their way.
        var covered = available
        for progress in fetches.values where progress.generation == generation {
            covered.insert(progress.cursor..<max(progress.cursor, progress.upper))
        }
        var frontier = covered.coveredPrefix(from: end)
        // The next window goes out as soon as less than a window is on its
        // way ahead of the reader, so a far origin's round trip is paid
        // while bytes still flow (see `ReadPlan.readAheadTarget`).
        let (ahead, refill) = ReadPlan.readAheadTarget(
            window: window, maximumWindow: context.tuning.maximumWindow,
            outruns: context.link.outruns(window: window))
        guard frontier < reach, frontier - end < refill else { return [] }
        // In the head the reach (below the file's end) grows with each
        // read: its next step goes out once less than half of it is ahead,
        // not a sliver per kernel read (a listener's first 4 MiB took eight
        // requests of 256 KiB after the first MiB).
        if let length, reach < length, frontier - end >= (reach - end) / 2 { return [] }
        // Until two responses agreed on the version, one request at a
        // time, sent once the one before brought all its bytes
        // (`unprovenFetchStillBringing`).
        if !current.agreed, fetches.values.contains(where: { $0.generation == generation && !$0.headArrived }) {
            return []
        }
        if unprovenFetchStillBringing() != nil {
            heldReadAhead = EpisodeRules.HeldReadAhead(
                handle: handle, end: end, window: window, reach: reach, generation: generation, context: context)
            return []
        }
        // One window on the link at a time: the next goes out when what
        // is still to arrive ahead of the reader is what the link holds in
        // flight, so a window further on never halves the rate of the one
        // the reader reads from (docs/DESIGN.md, "Read-ahead").
        var arriving = arrivingBytes(after: end)
        let overlap = ReadPlan.readAheadOverlap(link: context.link, tuning: context.tuning, window: window)
        var effects: [Effect] = []
        while frontier < reach, frontier - end < ahead, arriving <= overlap {
            // Up to the next bytes already here or on their way: a window
            // never fetches again what is cached further on.
            let nextCovered = covered.ranges.first { $0.lowerBound > frontier }?.lowerBound ?? reach
            let gapEnd = ReadPlan.readAheadEnd(from: frontier, window: window, length: reach, nextCovered: nextCovered)
            let effect = planFetch(from: frontier..<gapEnd, window: window, length: reach, tuning: context.tuning)
            guard case .fetch(_, let range) = effect else { break }
            effects.append(effect)
            arriving = arriving.saturatingAdding(Int64(range.count))
            covered.insert(range)
            frontier = covered.coveredPrefix(from: range.upperBound)
        }
        return effects
    }
}
