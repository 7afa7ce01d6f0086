/// What the reader has seen of the way to the origin: how long a request
/// waits for its response head, and how fast a body then flows. Their
/// product (the bytes "in the pipe") is how much a sequential reader must
/// keep on its way to never wait for a round trip.
///
/// Pure value; the reader keeps two per origin host, its own and as a feed
/// host (`LinkEstimates`, in its `Network`), behind a lock and feeds them
/// from the network thread.
public struct LinkEstimate: Sendable {
    public init() {}

    // MARK: - Properties

    /// Seconds from sending a request to its response head (smoothed).
    public private(set) var latency: Double?
    /// The shortest of those seen: the round trip itself, without the
    /// waits a busy daemon or origin add (under a cold read the smoothed
    /// figure can be many times the shortest).
    public private(set) var shortestLatency: Double?
    /// Body bytes per second of a response (smoothed).
    public private(set) var throughput: Double?

    // MARK: - Methods

    /// A response head arrived `seconds` after its request went out.
    public mutating func observe(latency seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        latency = Self.smooth(latency, seconds)
        shortestLatency = min(shortestLatency ?? seconds, seconds)
    }

    /// `bytes` of body arrived in `seconds` after the head. Bodies too short
    /// to tell a rate (one packet train) are ignored.
    public mutating func observe(bytes: Int64, in seconds: Double) {
        guard bytes >= Self.shortestBody, seconds.isFinite, seconds > 0 else { return }
        throughput = Self.smooth(throughput, Double(bytes) / seconds)
    }

    /// The read-ahead a sequential reader needs so the next request's round
    /// trip is paid while bytes still flow: twice the bandwidth-delay
    /// product, rounded up to a whole `granule`, within `bounds`; `nil`
    /// until both were measured.
    func readAhead(within bounds: ClosedRange<Int64>) -> Int64? {
        guard let latency else { return nil }
        return readAhead(within: bounds, latency: latency)
    }

    /// The same at the shortest round trip seen: what a window beyond the
    /// usual largest may grow to. Only a truly far origin gets it, not a
    /// near one whose responses queued behind a busy moment.
    func readAheadAtShortestLatency(within bounds: ClosedRange<Int64>) -> Int64? {
        guard let shortestLatency else { return nil }
        return readAhead(within: bounds, latency: shortestLatency)
    }

    private func readAhead(within bounds: ClosedRange<Int64>, latency: Double) -> Int64? {
        guard let throughput else { return nil }
        let wanted = 2 * throughput * latency
        guard wanted.isFinite, wanted < Double(bounds.upperBound) else { return bounds.upperBound }
        let granules = (Int64(wanted) + Self.granule - 1) / Self.granule
        return min(bounds.upperBound, max(bounds.lowerBound, granules * Self.granule))
    }

    /// Whether one window of `bytes` on its way is less than twice the
    /// bandwidth-delay product, so a reader would wait for the next one's
    /// round trip; `false` until both were measured.
    func outruns(window bytes: Int64) -> Bool {
        guard let latency, let throughput else { return false }
        return 2 * throughput * latency > Double(bytes)
    }

    /// Whether the origin answers within `nearLatency`: a round trip then
    /// costs less than receiving a few hundred KiB more, so a read that
    /// jumped may ask for just what it needs; from a far origin the reader
    /// that reads on after a jump would wait a round trip more for that.
    /// `false` until measured.
    var isNear: Bool {
        guard let latency else { return false }
        return latency < Self.nearLatency
    }

    // MARK: - Private

    /// Windows are whole multiples of this: a measured window of any odd
    /// size would end a fetch inside a page, so the kernel's next read
    /// (whole pages) would straddle two responses and every later window,
    /// each begun where the last one ended, would start off a page too.
    static let granule: Int64 = 64 * 1024

    /// A response head sooner than this (seconds) is a near origin.
    private static let nearLatency = 0.001

    /// Bodies shorter than this say little about the rate.
    private static let shortestBody: Int64 = 128 * 1024

    /// An even mix of the old and the new value: one odd response moves it
    /// halfway, a changed link is followed within a few.
    private static func smooth(_ old: Double?, _ new: Double) -> Double {
        guard let old else { return new }
        return (old + new) / 2
    }
}
