import RangeCache

/// The body events: bytes of a fetch arrived from the network, and the
/// writer stored them (or could not). Bytes become `present` only once
/// written, so the index, which commits `present` after `fdatasync`, never
/// lists a byte that is not on disk (guarantee 1 of docs/DESIGN.md). Bytes
/// that could not be written (a full disk) are kept in memory for the open
/// files' readers and never become `present`.
extension EpisodeRules.State {
    // MARK: - Nested types

    /// Where arrived bytes go, and the readers they answer at once.
    public struct Arrival: Sendable {
        public internal(set) var offset: Int64
        /// How many of the bytes belong to the fetch; the rest is more than
        /// the origin announced.
        public internal(set) var count: Int
        public internal(set) var generation: UInt64
        /// Readers of a short fetch (a jump, the open's probe) whose bytes
        /// are all here with these: they are answered from memory now.
        public internal(set) var early: [EpisodeRules.Waiter]
        /// The fetch yielded to a reader's jump: bytes past its end are not
        /// wanted, and the transfer stops without a warning.
        public internal(set) var yielded = false

        /// The answers of `early`, for the driver to carry out.
        public var answers: [Effect] {
            early.map { .serveArriving($0.reply, $0.range) }
        }
    }

    /// A reader whose bytes are all here: answered from the chunk just
    /// written and the scratch file, or with `spilled` bytes from memory.
    public struct ReadyRead: Sendable {
        public internal(set) var waiter: EpisodeRules.Waiter
        public internal(set) var scratch: EpisodeRules.FileToken?
        public internal(set) var spilled: [SpillBuffer.Piece]

        /// Its answer, for the driver to carry out: no bytes for a read at
        /// or past the end.
        public var answer: Effect {
            waiter.range.isEmpty
                ? .answerEmpty(waiter.reply) : .serveFile(waiter.reply, waiter.range, from: scratch, spilled: spilled)
        }
    }

    // MARK: - Events

    /// The driver opened (or failed to open, `made` `nil`) the scratch file
    /// of version `generation` outside the lock; `fileMissing`: the file
    /// was not on disk although bytes were cached (deleted by hand?), so
    /// what the index said is not there and is forgotten rather than
    /// served as zeros. Returns the file to read that version from (the
    /// one opened meanwhile by another thread wins; a replaced version's
    /// kept file) and whether the cached ranges were forgotten. Replaced
    /// meanwhile, the path may name the new version's file, and what was
    /// seen of it proves nothing: nothing changes.
    public mutating func scratchOpened(
        _ made: EpisodeRules.FileToken?, generation wanted: UInt64, fileMissing: Bool
    ) -> (scratch: EpisodeRules.FileToken?, forgot: Bool) {
        guard generation == wanted, !replacingScratch else {
            return (generation == wanted ? scratch : retired[wanted]?.scratch, false)
        }
        if fileMissing {
            current.forgetBytes()
            unsaved.insert(.ranges)
        }
        if case .notOpen = storage, let made { storage = .open(made) }
        return (scratch, fileMissing)
    }

    /// Whether `warning` is news for this episode (each is logged once).
    public mutating func warnOnce(_ warning: EpisodeRules.Warning) -> Bool {
        warned.insert(warning).inserted
    }

    /// `count` bytes of fetch `id`'s body arrived on the network thread,
    /// at `now` (monotonic seconds), if told. `nil`: the fetch is stale
    /// (another version) and stops.
    public mutating func bodyArrived(id: UInt64, count chunk: Int, now: Double? = nil) -> Arrival? {
        guard var progress = fetches[id], progress.generation == generation, scratch != nil || length != nil
        else { return nil }
        let room = progress.upper - progress.received
        let count = Int(min(Int64(chunk), max(0, room)))
        let offset = progress.received
        if let now { progress.arrived(at: offset, now: now) }
        progress.received += Int64(count)
        fetches[id] = progress
        // Bytes of this version may be answered from memory before they are
        // written: a file that reads them has read this version.
        if count > 0 { current.cached() }
        var early: [EpisodeRules.Waiter] = []
        if progress.answersOnArrival, count > 0 {
            // A reader that opened or jumped here waits for these bytes: it
            // is answered from memory (and the disk for what was there
            // before); the writer stores the chunk next.
            let arrived = offset..<offset + Int64(count)
            var here = present
            here.insert(arrived)
            let generation = generation
            waiters.removeAll { waiter in
                guard waiter.generation == generation, here.contains(waiter.range), waiter.range.overlaps(arrived)
                else { return false }
                early.append(waiter)
                return true
            }
        }
        return Arrival(offset: offset, count: count, generation: generation, early: early, yielded: progress.cutShort)
    }

    /// On the writer, before it writes `range` for fetch `id` of
    /// `generation`: the file to write to, the blocks to allocate ahead
    /// (long fetches allocate `step` bytes at a time) and the part of the
    /// range that overlaps bytes cached or on their way when the fetch
    /// began: it is held and compared, not written (`checkingContinuity`).
    /// `nil`: stale.
    public mutating func writeTarget(
        id: UInt64, generation: UInt64, range: Range<Int64>, step: Int64
    ) -> (scratch: EpisodeRules.FileToken?, allocation: Range<Int64>?, check: Range<Int64>?)? {
        guard self.generation == generation, var progress = fetches[id], progress.generation == generation,
            !stepsUnfinished
        else { return nil }
        var allocation: Range<Int64>?
        if scratch != nil, range.upperBound > progress.allocated, progress.upper - range.lowerBound >= step / 8 {
            let upper = min(progress.upper, max(range.upperBound, range.lowerBound + step))
            allocation = range.lowerBound..<upper
            progress.allocated = upper
            fetches[id] = progress
        }
        var check: Range<Int64>?
        if range.lowerBound < progress.checkUpTo {
            check = range.lowerBound..<min(range.upperBound, progress.checkUpTo)
        }
        return (scratch, allocation, check)
    }

    /// The writer stored `bytes` at `range` (`written`), or could not: they
    /// are then kept in memory while a file is open, up to `spillLimit`.
    /// Returns the readers now answered; `nil` when the bytes are stale
    /// (and were not marked).
    public mutating func bodyWritten(
        id: UInt64, range: Range<Int64>, generation: UInt64, written: Bool, bytes: UnsafeRawBufferPointer,
        spillLimit: Int
    ) -> [ReadyRead]? {
        guard var progress = fetches[id], progress.generation == self.generation, self.generation == generation
        else { return nil }
        current.cached()
        if written {
            // Bytes written again (a check of a cached byte) change nothing
            // the index must hear of.
            if current.wrote(range) { unsaved.insert(.ranges) }
        } else if !handles.isEmpty {
            spill.add(bytes, at: range.lowerBound, limit: spillLimit, needed: waiters.map(\.range))
        }
        progress.cursor = max(progress.cursor, range.upperBound)
        fetches[id] = progress
        let (available, scratch) = (available, scratch)
        var ready: [ReadyRead] = []
        waiters.removeAll { waiter in
            guard available.contains(waiter.range) else { return false }
            ready.append(ReadyRead(waiter: waiter, scratch: scratch, spilled: spill.pieces(overlapping: waiter.range)))
            return true
        }
        return ready
    }
}
