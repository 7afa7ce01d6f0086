/// Where one open file read (docs/DESIGN.md, "Who reads"): how far at the
/// head, how much of the tail, whether in the body between. Kept per open
/// file in `EpisodeRules.State` (noted by `read`, under the episode's lock, with
/// the length the read sees) and handed to `ScanPattern` when the file
/// closes: a scan is told from a listener at the close, at no cost per read.
public struct ReadExtent: Equatable, Sendable {
    /// Reads that start within this of the end are at the tail.
    static let tailZone: Int64 = 1024 * 1024

    public internal(set) var reads = 0
    /// The furthest end of a read at the head.
    public internal(set) var headEnd: Int64 = 0
    /// Bytes from the earliest read at the tail to the end.
    public internal(set) var tailSize: Int64 = 0
    /// A read neither at the head nor at the tail.
    public internal(set) var body = false
    /// The episode's length at the last read.
    public internal(set) var length: Int64 = 0

    /// Bytes never read between the head and the tail.
    public var unread: Int64 { length - headEnd - tailSize }

    /// A read of `offset..<end` of an episode `length` bytes long; reads
    /// that end within `head` (`ReadTuning.head`) are at the head.
    mutating func note(offset: Int64, end: Int64, length: Int64, head: Int64) {
        self.length = length
        reads += 1
        if end <= head {
            headEnd = max(headEnd, min(end, length))
        } else if offset >= length - Self.tailZone {
            tailSize = max(tailSize, length - offset)
        } else {
            body = true
        }
    }
}
