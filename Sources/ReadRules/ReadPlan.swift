/// The arithmetic of the fetches a read plans (`EpisodeRules.State.read`): where
/// a read ends, how large a sequential reader's window is, how far a fetch
/// from a gap and a read-ahead window reach.
///
/// Pure functions of their arguments, kept apart from the reader's locks and
/// state so that the path fuzzer (`scripts/fuzz path`) drives them with any
/// file size and any read, as a feed and an origin may make them. Sizes are
/// bounded where they enter (1 TiB), but every sum here also holds at
/// `Int64.max` rather than trapping.
public enum ReadPlan: Sendable {
    // MARK: - Constants

    /// How far from the end of the last read the next one may land and
    /// still count as sequential.
    static let nearby: Int64 = 2 * 1024 * 1024

    /// Whether a reader with `streak` reads in order reads on: it gets
    /// read-ahead windows, and its place is kept for a reopen. The one
    /// place this is decided (`window`, `EpisodeRules.State.read`, `release`).
    static func readsOn(streak: Int) -> Bool {
        streak >= 2
    }

    /// How long after a close a reopen still continues its stream.
    static let reopenGrace: Double = 30

    // MARK: - Methods

    /// Where a reader is after a read (`follow`).
    public struct Followed: Sendable {
        var reader: EpisodeRules.HandleState
        /// It took over `lastStream` (a reopen that reads on).
        var resumed: Bool
        /// The read lands near where the reader stopped, or near where it
        /// seeked back to (`HandleState.rewound`).
        var readsOn: Bool
        /// The reader is at a new place now: a jump beyond its window's
        /// reach, or a read on from where it seeked back to. What it was
        /// reading ahead at its old place is left behind
        /// (`EpisodeRules.State.yieldLeftBehind`).
        var moved: Bool
    }

    /// A reader's streak after it read `offset..<end`, and whether it took
    /// over `lastStream` (where the last sequential reader of the episode
    /// stopped, `now` being the same clock as its `closedAt`).
    ///
    /// The window grows while reads follow on. The kernel's read-ahead
    /// sends several reads at once and they may arrive out of order, so
    /// "follows on" means "lands near where the last one ended"; a jump
    /// further than that (a listener scrubbing) starts over. `window` is
    /// the read-ahead window of a streak (`window(streak:link:tuning:)`).
    /// A read behind the reader but within its window's reach is a seek
    /// back or a read the kernel sent late (under load, by more than
    /// `nearby`): the reader stays where it was and remembers the place
    /// (`rewound`); the next read tells which, as it reads on from one or
    /// the other.
    static func follow(
        _ reader: EpisodeRules.HandleState, offset: Int64, end: Int64,
        lastStream: (end: Int64, streak: Int, closedAt: Double)?, now: Double, window: (Int) -> Int64
    ) -> Followed {
        var reader = reader
        var resumed = false
        if reader.streak == 0, reader.nextOffset == 0, let last = lastStream,
            now - last.closedAt < reopenGrace, abs(offset - last.end) <= nearby
        {
            // A reopen that reads on where the last reader stopped.
            reader.streak = last.streak
            reader.nextOffset = last.end
            resumed = true
        }
        if reader.streak == 0, reader.nextOffset == 0, offset == 0 {
            // A fresh file read from its start is almost always a player
            // starting an episode: begin the streak one step ahead.
            reader.streak = 1
        }
        let distance = abs(offset - reader.nextOffset)
        if distance <= nearby {
            reader.streak += 1
            reader.nextOffset = max(reader.nextOffset, end)
            reader.rewound = nil
            return Followed(reader: reader, resumed: resumed, readsOn: true, moved: false)
        }
        if let back = reader.rewound, abs(offset - back) <= nearby {
            // It reads on where it seeked back to: it is there now.
            reader.streak += 1
            reader.nextOffset = max(back, end)
            reader.rewound = nil
            return Followed(reader: reader, resumed: resumed, readsOn: true, moved: true)
        }
        if distance <= max(nearby, window(reader.streak)) {
            reader.streak += 1
            if offset > reader.nextOffset {
                reader.nextOffset = end
                reader.rewound = nil
            } else {
                reader.rewound = end
            }
            return Followed(reader: reader, resumed: resumed, readsOn: false, moved: false)
        }
        reader.streak = 0
        reader.nextOffset = end
        reader.rewound = nil
        return Followed(reader: reader, resumed: resumed, readsOn: false, moved: true)
    }

    /// Where a read of `size` bytes at `offset` ends in a file of `length`
    /// bytes: at most at the end of the file.
    static func end(offset: Int64, size: Int, length: Int64) -> Int64 {
        min(length, offset.saturatingAdding(Int64(size)))
    }

    /// The read-ahead window after `streak` sequential reads, with what
    /// `link` has measured: it grows fourfold per read (1, 4, 16 MiB with
    /// the defaults), so a player that reads on costs a handful of
    /// requests, each round trip hidden behind the bytes still to arrive.
    /// Where the link holds more than that in flight (a far, fast origin),
    /// a sequential reader starts with what it holds instead of paying a
    /// round trip per step: up to `maximumWindow` by the smoothed round
    /// trip, up to `maximumLinkWindow` by the shortest. A read that jumped
    /// (streak 0) from a near origin fetches `jumpFetch`, the next one
    /// `minimumFetch`.
    static func window(streak: Int, link: LinkEstimate, tuning: ReadTuning) -> Int64 {
        guard readsOn(streak: streak) else {
            return streak == 0 && link.isNear ? tuning.jumpFetch : tuning.minimumFetch
        }
        let shift = min(2 * (streak - 1), 20)
        let ramp = min(tuning.maximumWindow, tuning.minimumFetch << shift)
        let bounds = tuning.minimumFetch...max(tuning.minimumFetch, tuning.maximumWindow)
        let farBounds = tuning.minimumFetch...max(bounds.upperBound, tuning.maximumLinkWindow)
        let usual = link.readAhead(within: bounds)
        let far = link.readAheadAtShortestLatency(within: farBounds)
        if isFarAndFast(link: link, tuning: tuning) {
            // Far and fast (`isFarAndFast`): its first estimates come from
            // short bodies on connections still in slow start, which
            // understate such a link several-fold, and each window too
            // small costs a new connection's round trips.
            return farBounds.upperBound
        }
        return max(ramp, usual ?? ramp, far ?? ramp)
    }

    /// Where a fetch from `gap`'s start widened to `window` ends, before
    /// bytes already present or on their way cut it short: at most at the
    /// end of the file.
    static func widenedEnd(of gap: Range<Int64>, window: Int64, length: Int64) -> Int64 {
        min(length, gap.lowerBound.saturatingAdding(max(window, Int64(gap.count))))
    }

    /// How far ahead of a sequential reader bytes are kept on their way
    /// (`ahead`), and below how much the next window goes out (`refill`):
    /// two windows for a reader at the largest window, and one and a half
    /// before refilling where one window `outruns` the link's bytes in
    /// flight.
    static func readAheadTarget(
        window: Int64, maximumWindow: Int64, outruns: @autoclosure () -> Bool
    ) -> (ahead: Int64, refill: Int64) {
        let ahead = window >= maximumWindow ? window.saturatingAdding(window) : window
        let refill = ahead > window && outruns() ? window.saturatingAdding(window / 2) : window
        return (ahead, refill)
    }

    /// How many bytes still to arrive ahead of a sequential reader let the
    /// next read-ahead window go out: twice the bytes the link holds in
    /// flight (`LinkEstimate.readAhead`), at least `minimumFetch`. Below
    /// that the next window's round trip is paid while the current one's
    /// last bytes arrive; above it the two would share the link, and the
    /// one the reader reads from would arrive at half the rate.
    /// On a far, fast link (`isFarAndFast`) the next window goes out while
    /// a whole `window` is still to arrive: its estimates come from short
    /// bodies on connections still in slow start, and a window held back
    /// for them waits for a new connection's two round trips after the
    /// reader caught up.
    static func readAheadOverlap(link: LinkEstimate, tuning: ReadTuning, window: Int64 = 0) -> Int64 {
        let bounds = tuning.minimumFetch...max(tuning.minimumFetch, tuning.maximumLinkWindow)
        let overlap = link.readAhead(within: bounds) ?? tuning.minimumFetch
        return isFarAndFast(link: link, tuning: tuning) ? max(overlap, window) : overlap
    }

    /// Whether the link is far and fast: at least `ReadTuning.farLatency`
    /// away, and twice its bytes in flight at its shortest round trip
    /// reach `ReadTuning.farAndFast`, so a round trip costs more than an
    /// episode's head. Loopback and a capped line of a few MB/s hold far
    /// less.
    static func isFarAndFast(link: LinkEstimate, tuning: ReadTuning) -> Bool {
        guard let shortest = link.shortestLatency, shortest >= tuning.farLatency,
            let inFlight = link.readAheadAtShortestLatency(
                within: tuning.minimumFetch...max(tuning.minimumFetch, tuning.maximumLinkWindow))
        else { return false }
        return inFlight >= tuning.farAndFast
    }

    /// Where the read-ahead window from `frontier` ends: a window on, the
    /// next bytes already covered or the end of the file, whichever comes
    /// first.
    static func readAheadEnd(from frontier: Int64, window: Int64, length: Int64, nextCovered: Int64) -> Int64 {
        min(length, frontier.saturatingAdding(window), nextCovered)
    }
}
