import ReadRules
/// Tells a library scan from other readers, by how files of one folder are
/// opened, read and closed (docs/DESIGN.md, "Who reads"), and says which
/// files to fetch ahead of it. Pure: the driver (`ScanAhead`) feeds it the
/// opens and closes of episode files, each close with where the file read
/// (`ReadExtent`), and carries out what it says.
///
/// A scanner (MPD, Jellyfin's ffprobe, beets) opens the files of a folder
/// one after another in `readdir` order (MPD) or by name (beets: the other
/// way round, as the listing is newest first), reads each at its head and
/// its tail, and closes it within seconds. Once two files next to each
/// other in the listing were scanned so, the next `depth` files the same
/// way are fetched ahead: their heads as far as the scan's own reads of
/// them would fetch (`EpisodeReader.Tuning.reach` of where it read the
/// files before, at most `headLimit`) and as much of their tails as it read
/// (at most `tailLimit`): what the scan reads next. A
/// program that opens one file, a listener (reads in the body), a file
/// read whole (however small), a file open for long or files opened out of
/// order start no fetch ahead, and a
/// scan that stops leaves at most `depth` files fetched ahead.
struct ScanPattern: Sendable {
    // MARK: - Nested types

    struct Tuning: Sendable {
        /// A scanned file is closed within this many seconds of its open.
        var longestOpen: Double = 10
        /// The next file of a scan is opened within this many seconds of
        /// the last close.
        var pause: Double = 5
        /// Files fetched ahead of the one the scan has open.
        var depth = 4
        /// The most of a file's head the scan's reads are followed to.
        var headLimit: Int64 = 1024 * 1024
        /// The read rules: a head is fetched ahead as far as a read of it
        /// would fetch (`EpisodeReader.Tuning.reach`). Less would leave a
        /// gap that the scan's reads fetch when they come faster, as on a
        /// remount, where MPD reads further ahead of its decoder.
        var reads = EpisodeReader.Tuning()
        /// The most of a file's tail fetched ahead.
        var tailLimit: Int64 = 64 * 1024

        init() {}
    }

    /// An episode file: its folder, its place among the folder's episodes
    /// in listing order, and how many there are.
    struct File: Equatable, Sendable {
        var folder: UInt64
        var position: Int
        var count: Int
    }

    /// Fetch the first `head` bytes and the last `tail` bytes (from the
    /// start of the page they begin in) of the folder's episode at
    /// `position`.
    struct Prefetch: Equatable, Sendable {
        var folder: UInt64
        var position: Int
        var head: Int64
        var tail: Int64
    }

    private struct OpenFile {
        var file: File
        var opened: Double
    }

    /// A folder being walked by a scanner.
    private struct Walk {
        /// The position of the last file scanned.
        var last: Int
        /// +1 or -1 once two files showed the way; 0 before.
        var step = 0
        /// Files scanned one after another, each next to the one before.
        var scanned = 1
        var headEnd: Int64
        var tailSize: Int64
        var closed: Double
        /// Positions fetched ahead or scanned.
        var asked: Set<Int>

        /// Whether a file at `position` goes on with this walk.
        func continues(at position: Int) -> Bool {
            position == last || (step == 0 ? abs(position - last) == 1 : position == last + step)
        }
    }

    // MARK: - Properties

    let tuning: Tuning
    private var open: [UInt64: OpenFile] = [:]
    private var walks: [UInt64: Walk] = [:]

    // MARK: - Init

    init(tuning: Tuning = Tuning()) {
        self.tuning = tuning
    }

    // MARK: - Events

    /// File `handle` of `file` opened at `now` (seconds). Returns what to
    /// fetch ahead: an open that goes on with a scan moves its reach.
    mutating func opened(handle: UInt64, file: File, now: Double) -> [Prefetch] {
        open[handle] = OpenFile(file: file, opened: now)
        guard var walk = walks[file.folder], walk.scanned >= 2, now - walk.closed <= tuning.pause,
            walk.continues(at: file.position)
        else { return [] }
        let ahead = prefetches(after: file.position, of: file, walk: &walk)
        walks[file.folder] = walk
        return ahead
    }

    /// File `handle` closed at `now`, having read `extent`. Returns what to
    /// fetch ahead.
    mutating func released(handle: UInt64, extent: ReadExtent, now: Double) -> [Prefetch] {
        guard let closed = open.removeValue(forKey: handle) else { return [] }
        let file = closed.file
        guard extent.reads > 0 else { return [] }
        // A scan leaves a file's body unread: at least a quarter of it (a
        // small file read whole, `cat` or a copy, is no scan, even with
        // every read in its head).
        guard !extent.body, now - closed.opened <= tuning.longestOpen, extent.unread >= extent.length / 4 else {
            // A listener, a copy, or a file held open: whatever walked
            // this folder, this is not its scan.
            walks[file.folder] = nil
            return []
        }
        var walk: Walk
        if var going = walks[file.folder], now - going.closed <= tuning.pause, going.continues(at: file.position) {
            if file.position != going.last {
                going.step = file.position - going.last
                going.scanned += 1
            }
            going.last = file.position
            going.headEnd = max(going.headEnd, extent.headEnd)
            going.tailSize = max(going.tailSize, extent.tailSize)
            going.closed = now
            going.asked.insert(file.position)
            walk = going
        } else {
            walk = Walk(
                last: file.position, headEnd: extent.headEnd, tailSize: extent.tailSize, closed: now,
                asked: [file.position])
        }
        guard walk.scanned >= 2 else {
            walks[file.folder] = walk
            return []
        }
        let ahead = prefetches(after: file.position, of: file, walk: &walk)
        walks[file.folder] = walk
        return ahead
    }

    /// Forgets walks that ended (`pause` seconds without a close), so
    /// folders scanned once cost nothing for the rest of the mount.
    mutating func forgetEnded(now: Double) {
        walks = walks.filter { now - $0.value.closed <= tuning.pause * 4 }
    }

    // MARK: - Private methods

    private mutating func prefetches(after position: Int, of file: File, walk: inout Walk) -> [Prefetch] {
        let read = min(tuning.headLimit, Self.pageRounded(walk.headEnd))
        let head = read > 0 ? min(tuning.headLimit, tuning.reads.reach(ofReadEndingAt: read, length: .max)) : 0
        // The tail in bytes from the end: the driver starts it at the
        // page the kernel's read of those bytes starts at.
        let tail = min(tuning.tailLimit, walk.tailSize)
        guard head > 0 || tail > 0, walk.step != 0, tuning.depth > 0 else { return [] }
        let ahead = (1...tuning.depth).map { position + $0 * walk.step }
            .filter { (0..<file.count).contains($0) && !walk.asked.contains($0) }
        walk.asked.formUnion(ahead)
        return ahead.map { Prefetch(folder: file.folder, position: $0, head: head, tail: tail) }
    }

    private static func pageRounded(_ bytes: Int64) -> Int64 {
        (bytes + 4095) / 4096 * 4096
    }
}
