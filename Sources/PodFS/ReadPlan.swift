/// The arithmetic of the fetches a read plans (`EpisodeReader.read`): where
/// a read ends, how large a sequential reader's window is, how far a fetch
/// from a gap and a read-ahead window reach.
///
/// Pure functions of their arguments, kept apart from the reader's locks and
/// state so that the path fuzzer (`scripts/fuzz path`) drives them with any
/// file size and any read, as a feed and an origin may make them. Sizes are
/// bounded where they enter (1 TiB), but every sum here also holds at
/// `Int64.max` rather than trapping.
enum ReadPlan {
    // MARK: - Methods

    /// Where a read of `size` bytes at `offset` ends in a file of `length`
    /// bytes: at most at the end of the file.
    static func end(offset: Int64, size: Int, length: Int64) -> Int64 {
        min(length, offset.saturatingAdding(Int64(size)))
    }

    /// The read-ahead window after `streak` sequential reads (see
    /// `EpisodeReader.windowSize`), with what `link` has measured.
    static func window(streak: Int, link: LinkEstimate, tuning: EpisodeReader.Tuning) -> Int64 {
        guard streak >= 2 else {
            return streak == 0 && link.isNear ? tuning.jumpFetch : tuning.minimumFetch
        }
        let shift = min(2 * (streak - 1), 20)
        let ramp = min(tuning.maximumWindow, tuning.minimumFetch << shift)
        let bounds = tuning.minimumFetch...max(tuning.minimumFetch, tuning.maximumWindow)
        let farBounds = tuning.minimumFetch...max(bounds.upperBound, tuning.maximumLinkWindow)
        let usual = link.readAhead(within: bounds)
        let far = link.readAheadAtShortestLatency(within: farBounds)
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

    /// Where the read-ahead window from `frontier` ends: a window on, the
    /// next bytes already covered or the end of the file, whichever comes
    /// first.
    static func readAheadEnd(from frontier: Int64, window: Int64, length: Int64, nextCovered: Int64) -> Int64 {
        min(length, frontier.saturatingAdding(window), nextCovered)
    }
}
