import Testing

@testable import PodFS
@testable import ReadRules

/// A scan is told from other readers by how a folder's files are opened,
/// read and closed (docs/DESIGN.md, "Who reads"), and only a scan fetches
/// ahead, no more than `depth` files past the one it has open.
@Suite struct ScanPatternTests {
    private let kib: Int64 = 1024
    private let mib: Int64 = 1024 * 1024
    private let folder: UInt64 = 7

    private func file(_ position: Int, count: Int = 30) -> ScanPattern.File {
        ScanPattern.File(folder: folder, position: position, count: count)
    }

    /// The length of the episode at `position`.
    private func length(_ position: Int) -> Int64 {
        9 * mib + Int64(position) * 1000
    }

    /// Where a file read (`ReadExtent`), as `Episode.State.read` notes it:
    /// reads of `size` bytes at each offset, of an episode `length` long.
    private func extent(_ reads: [(offset: Int64, size: Int)], length: Int64) -> ReadExtent {
        var extent = ReadExtent()
        for read in reads {
            extent.note(
                offset: read.offset, end: read.offset + Int64(read.size), length: length,
                head: EpisodeReader.Tuning().head)
        }
        return extent
    }

    /// MPD's reads of one file: the head through the kernel's 128 KiB
    /// read-ahead up to 1 MiB, then the last page.
    private func scan(
        _ pattern: inout ScanPattern, _ position: Int, handle: UInt64, at now: Double, count: Int = 30
    ) -> (opened: [ScanPattern.Prefetch], closed: [ScanPattern.Prefetch]) {
        let opened = pattern.opened(handle: handle, file: file(position, count: count), now: now)
        let length = length(position)
        let lastPage = (length - 1) / 4096 * 4096
        let read = extent((0..<8).map { (Int64($0) * 128 * kib, 128 * 1024) } + [(lastPage, 4096)], length: length)
        return (opened, pattern.released(handle: handle, extent: read, now: now + 0.05))
    }

    @Test func twoFilesScannedInListingOrderFetchTheNextFourAhead() {
        var pattern = ScanPattern()
        #expect(scan(&pattern, 0, handle: 1, at: 0).closed.isEmpty, "one file is no scan")
        let ahead = scan(&pattern, 1, handle: 2, at: 0.1).closed
        #expect(ahead.map(\.position) == [2, 3, 4, 5])
        // What the scan read of the files before: 1 MiB of the head, and
        // the tail from its last page.
        #expect(ahead.allSatisfy { $0.head == mib && $0.tail > 0 && $0.tail <= 4096 })
        // The next open moves the reach by one; nothing is asked twice.
        let next = scan(&pattern, 2, handle: 3, at: 0.2)
        #expect(next.opened.map(\.position) == [6])
        #expect(next.closed.isEmpty)
    }

    /// A scan that read 384 KiB of each head, as MPD's slow reads do:
    /// its own read of the next file would fetch the first MiB
    /// (`EpisodeReader.Tuning.reach`), so that is what goes ahead. Only
    /// what it read would leave a gap its faster reads on a remount fetch.
    @Test func aHeadIsFetchedAheadAsFarAsTheScansReadWouldFetch() {
        var pattern = ScanPattern()
        for position in 0..<2 {
            _ = pattern.opened(handle: UInt64(position + 1), file: file(position), now: Double(position))
            let lastPage = (length(position) - 1) / 4096 * 4096
            let read = extent(
                (0..<3).map { (Int64($0) * 128 * kib, 128 * 1024) } + [(lastPage, 4096)], length: length(position))
            let ahead = pattern.released(handle: UInt64(position + 1), extent: read, now: Double(position) + 0.05)
            if position == 1 {
                #expect(ahead.map(\.head) == Array(repeating: EpisodeReader.Tuning().scanReach, count: 4))
            }
        }
    }

    @Test func aFileOpenedTwiceByTheScannerKeepsTheWalk() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        _ = scan(&pattern, 0, handle: 2, at: 0.1)  // MPD: the tags, then the decoder
        #expect(scan(&pattern, 1, handle: 3, at: 0.2).closed.map(\.position) == [2, 3, 4, 5])
        #expect(scan(&pattern, 1, handle: 4, at: 0.3).closed.isEmpty)
    }

    @Test func oneFileOpenedAloneNeverFetchesAhead() {
        var pattern = ScanPattern()
        #expect(scan(&pattern, 4, handle: 1, at: 0).closed.isEmpty)
        #expect(scan(&pattern, 4, handle: 2, at: 30).closed.isEmpty)
    }

    @Test func filesOpenedOutOfListingOrderFetchNothingAhead() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 3, handle: 1, at: 0)
        #expect(scan(&pattern, 9, handle: 2, at: 0.1).closed.isEmpty)
        #expect(scan(&pattern, 1, handle: 3, at: 0.2).closed.isEmpty)
        #expect(scan(&pattern, 3, handle: 4, at: 0.3).closed.isEmpty)
    }

    /// beets walks by name, oldest first: the listing (newest first) the
    /// other way round.
    @Test func aScanAgainstTheListingFetchesAheadTheSameWay() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 20, handle: 1, at: 0)
        #expect(scan(&pattern, 19, handle: 2, at: 0.1).closed.map(\.position) == [18, 17, 16, 15])
        #expect(scan(&pattern, 18, handle: 3, at: 0.2).opened.map(\.position) == [14])
        // A step back the other way is another walk.
        #expect(scan(&pattern, 19, handle: 4, at: 0.3).opened.isEmpty)
    }

    /// An open answered before its first response knows only the feed's
    /// length: its reads tell the real one, so a tail read is a tail read.
    @Test func theLengthTheReadsSeeDecidesWhatIsTheTail() {
        var pattern = ScanPattern()
        for (handle, position) in [(UInt64(1), 0), (2, 1)] {
            // The feed claimed 40 MiB; the reads see the origin's 9 MiB.
            let real = 9 * mib
            _ = pattern.opened(handle: handle, file: file(position), now: Double(position))
            let read = extent([(0, 128 * 1024), (real - 4096, 4096)], length: real)
            let closed = pattern.released(handle: handle, extent: read, now: Double(position) + 0.1)
            if position == 1 { #expect(closed.map(\.position) == [2, 3, 4, 5] && closed.allSatisfy { $0.tail == 4096 }) }
        }
    }

    @Test func aListenerEndsTheWalk() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        _ = scan(&pattern, 1, handle: 2, at: 0.1)
        // A player opens the next file and reads on into its body.
        let opened = pattern.opened(handle: 3, file: file(2), now: 0.2)
        #expect(opened.map(\.position) == [6], "an open next in line looks like the scan")
        let listened = extent((0..<40).map { (Int64($0) * 128 * kib, 128 * 1024) }, length: length(2))
        #expect(pattern.released(handle: 3, extent: listened, now: 0.3).isEmpty)
        #expect(pattern.opened(handle: 4, file: file(3), now: 0.4).isEmpty, "the walk ended")
    }

    /// `cat` or `podfs prefetch` of small files: every read is in the
    /// head, but the whole file is read.
    @Test func smallFilesReadWholeAreNoScan() {
        var pattern = ScanPattern()
        for (handle, position) in [(UInt64(1), 0), (2, 1), (3, 2)] {
            _ = pattern.opened(handle: handle, file: file(position), now: Double(position))
            let whole = extent((0..<3).map { (Int64($0) * 128 * kib, 128 * 1024) }, length: 300_001)
            #expect(pattern.released(handle: handle, extent: whole, now: Double(position) + 0.1).isEmpty, "file \(position)")
        }
    }

    @Test func aFileHeldOpenIsNoScan() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        let held = pattern.opened(handle: 2, file: file(1), now: 1)
        #expect(held.isEmpty)
        let read = extent([(0, 4096)], length: length(1))
        #expect(pattern.released(handle: 2, extent: read, now: 20).isEmpty, "open 19 s")
    }

    @Test func aPauseEndsTheWalk() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        #expect(scan(&pattern, 1, handle: 2, at: 10).closed.isEmpty, "10 s after the last close")
    }

    @Test func theReachStopsAtTheFolderEnd() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0, count: 4)
        #expect(scan(&pattern, 1, handle: 2, at: 0.1, count: 4).closed.map(\.position) == [2, 3])
        #expect(scan(&pattern, 2, handle: 3, at: 0.2, count: 4).opened.isEmpty)
    }

    @Test func theHeadFetchedAheadIsAtMostTheLimit() {
        var pattern = ScanPattern()
        for (handle, position) in [(UInt64(1), 0), (2, 1)] {
            _ = pattern.opened(handle: handle, file: file(position), now: Double(position))
            let cover = extent([(0, 3 * 1024 * 1024)], length: length(position))  // a 3 MB cover
            let closed = pattern.released(handle: handle, extent: cover, now: Double(position) + 0.1)
            if position == 1 { #expect(closed.allSatisfy { $0.head == mib && $0.tail == 0 }) }
        }
    }

    @Test func aFileThatWasNotReadTeachesNothing() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        _ = pattern.opened(handle: 2, file: file(1), now: 0.1)
        #expect(pattern.released(handle: 2, extent: ReadExtent(), now: 0.2).isEmpty, "opened and closed without a read")
    }
}
