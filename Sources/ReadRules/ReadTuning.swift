/// Tuning of fetch sizes (`EpisodeReader.Tuning` in the driver).
public struct ReadTuning: Sendable {
    /// The smallest fetch for a gap of a read that continues a stream
    /// (its first step), and the open's probe.
    public var minimumFetch: Int64 = 256 * 1024
    /// The smallest fetch for a read that jumped (a scrub, a random
    /// read) from a near origin (`LinkEstimate.isNear`): the kernel's
    /// request, at least this. The reader waits for what it asked for,
    /// not for 256 KiB it may never read, which on a near origin costs
    /// more than another request. A reader that reads on grows its
    /// window from the next read. From a far origin a jump fetches
    /// `minimumFetch`: the next read would otherwise wait a round trip
    /// more.
    public var jumpFetch: Int64 = 16 * 1024
    /// The largest read-ahead window a sequential reader's streak grows
    /// to (1, 4, 16 MiB).
    public var maximumWindow: Int64 = 16 * 1024 * 1024
    /// The largest window sized by the link instead (twice the bytes it
    /// holds in flight at its shortest round trip,
    /// `LinkEstimate.readAheadAtShortestLatency`): only a far and fast
    /// origin needs more than `maximumWindow` (its bytes in flight
    /// exceed it), and there windows capped at 16 MiB each go out on a
    /// connection of their own, every new one a round trip more. It is
    /// a window of time, not of bytes: a link slow enough to need less
    /// gets less, and a near origin keeps the ramp's 16 MiB.
    public var maximumLinkWindow: Int64 = 64 * 1024 * 1024
    /// An episode's head: while a reader's reads end within it, it may
    /// be a scanner reading tags (MPD, ffprobe, a file manager), so a
    /// fetch reaches `scanReach` and, once a read passed that, twice
    /// the read's end (four requests for a listener's first 4 MiB, not
    /// one per kernel read, and a scanner reading a bigger cover pays
    /// about what it reads); a reader that moves on past it (a
    /// listener) gets its windows.
    public var head: Int64 = 4 * 1024 * 1024
    /// A fetch in the head reaches at least this far: one request for
    /// what a scanner reads at a file's head, and the budget a scan
    /// costs (docs/DESIGN.md, "Who reads"). MPD reads 772-806 KiB of a
    /// file with a 277 KB cover when the file comes slowly (its
    /// `UringInputStream` keeps up to 512 KiB read ahead of its decoder,
    /// so up to 1 MiB when it comes fast, as on a remount), and the
    /// kernel's read-ahead (`readahead_kb`, 128 KiB by default) asks one
    /// window past that: 1 MiB in all, then the tail's last page. Its
    /// response is also the second one, which shows a host that stitches
    /// per request (docs/DESIGN.md, "Until two responses agree").
    public var scanReach: Int64 = 1024 * 1024
    /// The read-ahead a link asks for (twice its bytes in flight at its
    /// shortest round trip) from which it is far and fast
    /// (`ReadPlan.isFarAndFast`): a whole episode head (4 MiB) arrives
    /// within a round trip. Loopback holds about 1 MiB, a capped line of
    /// a few MB/s far less; an origin 20 ms away on a fast line tens of
    /// MiB.
    public var farAndFast: Int64 = 4 * 1024 * 1024
    /// The shortest round trip (seconds) from which a link may be far and
    /// fast: a body that came in one burst on loopback can make a near
    /// origin's rate look like tens of GB/s, and its bytes in flight as
    /// large as a far one's.
    public var farLatency: Double = 0.01
    /// Seconds after its last open file closed that an episode's
    /// fetches nobody reads stop: a player that closes and reopens
    /// keeps its stream, a scanner's open costs what it read.
    public var closeGrace: Double = 2
    /// Attempts per fetch before readers get EIO.
    public var attempts: Int = 4
    /// The longest `Retry-After` a retry waits for; an origin asking
    /// for more gets no retry (the read fails at once with EIO).
    public var longestRetryAfter: Double = 5
    /// Seconds after which an open asks the origin again whether the
    /// episode changed (the first open in a mount always asks).
    public var revalidateAfter: Double = 3600
    /// The most bytes the cache may hold; `nil`: no cap.
    public var cacheLimit: Int64?
    /// Commit after every chunk written instead of on the flush
    /// thread's interval (slow; for measuring what batching saves).
    public var commitEveryChunk = false
    /// The most bytes per episode kept in memory when they cannot be
    /// written to the cache (a full disk).
    public var spillLimit = 64 * 1024 * 1024

    public init() {}

    /// How far a fetch for a read ending at `end` of a file of `length`
    /// bytes reaches: in the head no further than `scanReach`, or once
    /// a read passed that, twice the read's end (at most the head's
    /// end): a scanner leaves there, a listener reads on into its
    /// windows. Past the head, to the end (the windows cut it). A far,
    /// fast link (`farAndFast`) gets its windows as soon as a read passed
    /// `scanReach`: there each doubling would cost a round trip in which
    /// more than the head could have come (a listener's first 4 MiB from
    /// an origin 20 ms away took four round trips where `curl` takes
    /// one), and a scanner's bigger cover costs what arrives in about one
    /// round trip, the time it would have waited anyway.
    public func reach(ofReadEndingAt end: Int64, length: Int64, farAndFast: Bool = false) -> Int64 {
        if end > head { return length }
        guard end > scanReach else { return min(length, scanReach) }
        if farAndFast { return length }
        return min(length, min(head, 2 * end))
    }
}
