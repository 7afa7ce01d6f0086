import RangeCache

/// The listener comes first (docs/DESIGN.md, "Join or jump"): a read whose
/// bytes a running fetch would bring later than a request of its own
/// starts that request, and the running fetch yields. It ends where the
/// readers that need it stop (what it brought stays cached); the bytes it
/// gave up are `deferred` and fetched once the episode has no fetch on its
/// way, each byte once (guarantee 2).
extension EpisodeRules.State {
    // MARK: - Internal methods

    /// Lets the fetches that would bring the first byte of each gap of
    /// `wanted` later than a request of its own yield to this read of
    /// `handle` (whose streak is already updated; `following`: the read
    /// lands within `ReadPlan.nearby` of where the reader stopped). Returns
    /// the fetches that want nothing more: their transfers are stopped at
    /// once.
    ///
    /// `since`: when the read began to wait (a fetch that brought nothing
    /// yet has been silent at least since then).
    mutating func yieldToJump(
        wanted: Range<Int64>, handle: UInt64?, following: Bool, link: LinkEstimate, now: Double, since: Double,
        window: (Int) -> Int64
    ) -> [UInt64] {
        var stopped: [UInt64] = []
        for gap in available.gaps(in: wanted) {
            let position = gap.lowerBound
            for (id, progress) in streams(bringing: position) {
                let joins = JoinOrJump.joins(
                    position: position, received: progress.received, need: Int64(gap.count), following: following,
                    rate: progress.rate(link: link, now: now), roundTrip: link.latency,
                    silence: now - (progress.lastArrival ?? since))
                if !joins, yield(id, before: position, to: handle, window: window) { stopped.append(id) }
            }
        }
        return stopped
    }

    /// Open file `handle` jumped to `wanted`, away from where it read: the
    /// read-ahead it left behind is far from it now. Each fetch that does
    /// not bring bytes of `wanted` (those are `yieldToJump`'s) yields where
    /// it has come, so the new place has the link to itself: it ends where
    /// the readers that still need it stop (a read waiting on it, another
    /// open file playing inside it), and the rest is `deferred`, fetched
    /// once nothing else is on its way. Returns the fetches that want
    /// nothing more: their transfers are stopped at once.
    mutating func yieldLeftBehind(by handle: UInt64, wanted: Range<Int64>, window: (Int) -> Int64) -> [UInt64] {
        var stopped: [UInt64] = []
        for (id, progress) in fetches
        where progress.generation == generation && !progress.answersOnArrival && progress.received < progress.upper
            && !(progress.cursor..<progress.upper).overlaps(wanted)
        {
            if yield(id, before: progress.upper, to: handle, window: window) { stopped.append(id) }
        }
        return stopped
    }

    /// Whether a read of `wanted` that jumped waits, at least in part, for
    /// a fetch that could yield to it (not a short fetch of its own): it
    /// is then judged again when `recheckDue` comes.
    func waitsOnAStream(_ wanted: Range<Int64>) -> Bool {
        available.gaps(in: wanted).contains { !streams(bringing: $0.lowerBound).isEmpty }
    }

    /// The fetches of this version still to bring `position` that could
    /// yield (not a short fetch a reader waits on).
    /// Lazy: no allocation on the read path.
    private func streams(bringing position: Int64) -> LazyFilterSequence<[UInt64: EpisodeRules.FetchProgress]> {
        let generation = generation
        return fetches.lazy.filter { _, progress in
            progress.generation == generation && !progress.answersOnArrival
                && progress.cursor <= position && position < progress.upper
        }
    }

    /// Ends fetch `id` where the readers that need it stop, and at most at
    /// `position`: the bytes after that are `deferred`. A fetch that was
    /// not past its head yet stops empty when the head comes. Returns
    /// whether it wants nothing more (its transfer can stop now).
    @discardableResult
    mutating func yield(_ id: UInt64, before position: Int64, to handle: UInt64?, window: (Int) -> Int64) -> Bool {
        guard var progress = fetches[id] else { return false }
        var end = progress.received
        for waiter in waiters where waiter.generation == generation {
            // A reader already waiting on this fetch keeps its bytes coming.
            if waiter.range.overlaps(progress.received..<progress.upper) {
                end = max(end, waiter.range.upperBound)
            }
        }
        for (other, reader) in handles where other != handle && reader.streak > 0 {
            // Another reader playing inside the stream keeps its window.
            if reader.nextOffset >= progress.cursor - ReadPlan.nearby, reader.nextOffset < progress.upper {
                end = max(end, reader.nextOffset.saturatingAdding(window(reader.streak)))
            }
        }
        end = min(end, position, progress.upper)
        guard end < progress.upper else { return false }
        deferred.insert(end..<progress.upper)
        progress.cut(at: end)
        fetches[id] = progress
        return end <= progress.received
    }

    /// The bytes to fetch now that nothing else is on its way: the first
    /// deferred stretch that is neither here nor on its way, registered as
    /// fetch `id`. `nil` while a fetch of this version is on its way, or
    /// when nothing is deferred.
    mutating func fillFetch() -> (id: UInt64, range: Range<Int64>)? {
        guard !deferred.isEmpty, let length else { return nil }
        // An unstable origin is streamed whole (`streamingWhole`): a ranged
        // fill would bring bytes of another variant.
        guard unstable == nil else {
            deferred = RangeSet()
            return nil
        }
        guard !fetches.values.contains(where: { $0.generation == generation }) else { return nil }
        let available = available
        for stretch in deferred.ranges {
            let upper = min(stretch.upperBound, length)
            guard stretch.lowerBound < upper else { continue }
            if let gap = available.firstGap(in: stretch.lowerBound..<upper) {
                deferred.remove(0..<gap.upperBound)
                let id = takeFetchID()
                fetches[id] = EpisodeRules.FetchProgress(cursor: gap.lowerBound, upper: gap.upperBound, generation: generation)
                return (id, gap)
            }
        }
        deferred = RangeSet()
        return nil
    }
}

extension EpisodeRules.FetchProgress {
    /// The rate this fetch brings its bytes at: the link's, or the fetch's
    /// own since its first bytes when that is slower (a stream the origin
    /// or a shared link holds back is not waited for as if it flowed).
    func rate(link: LinkEstimate, now: Double) -> Double? {
        guard case .receiving(let arrivals) = phase, now > arrivals.firstTime else { return link.throughput }
        let own = Double(received - arrivals.firstOffset) / (now - arrivals.firstTime)
        guard let measured = link.throughput else { return own }
        return min(measured, own)
    }

    /// The rate this fetch brought its bytes at from its first arrival to
    /// its last, its silence since left out; `nil` until two arrivals lie
    /// apart in time.
    var flowingRate: Double? {
        guard case .receiving(let arrivals) = phase, arrivals.lastTime > arrivals.firstTime else { return nil }
        let rate = Double(received - arrivals.firstOffset) / (arrivals.lastTime - arrivals.firstTime)
        return rate.isFinite && rate > 0 ? rate : nil
    }
}
