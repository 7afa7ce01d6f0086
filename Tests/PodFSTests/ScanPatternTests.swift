import Testing

@testable import PodFS

/// A scan is told from other readers by how a folder's files are opened,
/// read and closed (docs/DESIGN.md, "Who reads"), and only a scan fetches
/// ahead, no more than `depth` files past the one it has open.
@Suite struct ScanPatternTests {
    private let kib: Int64 = 1024
    private let mib: Int64 = 1024 * 1024
    private let folder: UInt64 = 7

    private func file(_ position: Int, count: Int = 30) -> ScanPattern.File {
        ScanPattern.File(folder: folder, position: position, count: count, length: 9 * mib + Int64(position) * 1000)
    }

    /// MPD's reads of one file: the head through the kernel's 128 KiB
    /// read-ahead up to 1 MiB, then the last page.
    private func scan(
        _ pattern: inout ScanPattern, _ position: Int, handle: UInt64, at now: Double, count: Int = 30
    ) -> (opened: [ScanPattern.Prefetch], closed: [ScanPattern.Prefetch]) {
        let file = file(position, count: count)
        let opened = pattern.opened(handle: handle, file: file, now: now)
        for step in Int64(0)..<8 {
            pattern.read(handle: handle, offset: step * 128 * kib, size: 128 * 1024, length: file.length)
        }
        let lastPage = (file.length - 1) / 4096 * 4096
        pattern.read(handle: handle, offset: lastPage, size: 4096, length: file.length)
        return (opened, pattern.released(handle: handle, now: now + 0.05))
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
            var claimed = file(position)
            claimed.length = 40 * mib  // the feed's claim, far off
            let real = 9 * mib
            _ = pattern.opened(handle: handle, file: claimed, now: Double(position))
            pattern.read(handle: handle, offset: 0, size: 128 * 1024, length: real)
            pattern.read(handle: handle, offset: real - 4096, size: 4096, length: real)
            let closed = pattern.released(handle: handle, now: Double(position) + 0.1)
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
        for step in Int64(0)..<40 {
            pattern.read(handle: 3, offset: step * 128 * kib, size: 128 * 1024, length: file(2).length)
        }
        #expect(pattern.released(handle: 3, now: 0.3).isEmpty)
        #expect(pattern.opened(handle: 4, file: file(3), now: 0.4).isEmpty, "the walk ended")
    }

    /// `cat` or `podfs prefetch` of small files: every read is in the
    /// head, but the whole file is read.
    @Test func smallFilesReadWholeAreNoScan() {
        var pattern = ScanPattern()
        for (handle, position) in [(UInt64(1), 0), (2, 1), (3, 2)] {
            let small = ScanPattern.File(folder: folder, position: position, count: 30, length: 300_001)
            _ = pattern.opened(handle: handle, file: small, now: Double(position))
            for step in Int64(0)..<3 { pattern.read(handle: handle, offset: step * 128 * kib, size: 128 * 1024, length: 300_001) }
            #expect(pattern.released(handle: handle, now: Double(position) + 0.1).isEmpty, "file \(position)")
        }
    }

    @Test func aFileHeldOpenIsNoScan() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        let held = pattern.opened(handle: 2, file: file(1), now: 1)
        #expect(held.isEmpty)
        pattern.read(handle: 2, offset: 0, size: 4096, length: file(1).length)
        #expect(pattern.released(handle: 2, now: 20).isEmpty, "open 19 s")
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
            pattern.read(handle: handle, offset: 0, size: 3 * 1024 * 1024, length: file(position).length)  // a 3 MB cover
            let closed = pattern.released(handle: handle, now: Double(position) + 0.1)
            if position == 1 { #expect(closed.allSatisfy { $0.head == mib && $0.tail == 0 }) }
        }
    }

    @Test func aFileThatWasNotReadTeachesNothing() {
        var pattern = ScanPattern()
        _ = scan(&pattern, 0, handle: 1, at: 0)
        _ = pattern.opened(handle: 2, file: file(1), now: 0.1)
        #expect(pattern.released(handle: 2, now: 0.2).isEmpty, "opened and closed without a read")
    }
}
