import Foundation
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

extension ReadBench {
    /// A link 50 ms away each way, 2 MB/s.
    static var homeLine: LinkEstimate {
        var link = LinkEstimate()
        link.observe(latency: 0.1)
        link.observe(bytes: 2_000_000, in: 1)
        return link
    }

    /// Reader 1 reads from `start` to `end` in order, 128 KiB at a time;
    /// returns the one read-ahead window that went out meanwhile.
    mutating func readInOrder(from start: Int64, to end: Int64) -> (id: UInt64, range: Range<Int64>) {
        var windows: [(id: UInt64, range: Range<Int64>)] = []
        for offset in stride(from: start, to: end, by: 128 * 1024) {
            for case .fetch(let id, let range) in read(1, at: offset) { windows.append((id, range)) }
        }
        #expect(windows.count == 1, "one read-ahead window: \(windows)")
        #expect(state.handles[1]?.nextOffset == end)
        return windows.first ?? (0, 0..<0)
    }
}

/// A sequential reader's read-ahead when it moves (docs/DESIGN.md, "Join or
/// jump" and "Read-ahead"): the window it left behind yields, once it is
/// sure the reader moved; one window is on the link at a time.
@Suite struct LeftBehindTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024
    /// A player's hour-long MP3.
    private let episode: Int64 = 57_601_088

    @Test func aSeekBackWithinTheStreaksReachReadsOnFromTheNewPlace() {
        // A player 20 MiB in seeks back 10 MiB, within its 16 MiB window's
        // reach: the seek is a jump, but the next read there reads on, and
        // its read-ahead goes out (before, the reader stayed at its old
        // place, so every read after the seek was a jump of its own with
        // no read-ahead: a round trip per kernel read).
        var bench = ReadBench(length: episode, present: [0..<mib, 18 * mib..<20 * mib])
        bench.link = ReadBench.homeLine
        // It played the 2 MiB cached there (its window from 20 MiB went out).
        _ = bench.readInOrder(from: 18 * mib, to: 20 * mib)
        let seek = ReadBench.fetched(bench.read(at: 10 * mib, size: 128 * 1024))
        #expect(seek.count == 1 && seek.first?.lowerBound == 10 * mib, "the seek's own fetch: \(seek)")
        #expect(bench.state.handles[1]!.rewound == 10 * mib + 128 * kib)
        let next = ReadBench.fetched(bench.read(at: 10 * mib + 128 * kib, size: 128 * 1024))
        // The read-ahead: from the seek's fetch to the bytes cached at 18 MiB.
        #expect(next == [seek[0].upperBound..<18 * mib], "the reader reads on with its window: \(next)")
    }

    @Test func aReadTheKernelSentLateDoesNotMoveTheReaderBack() {
        // Under load the kernel's read-ahead reads arrive out of order, one
        // more than `nearby` behind: the reader stays where it was, its
        // next read in order reads on, and its stream is not cut.
        var (bench, window) = playingAt12MiB()
        let upper = bench.state.fetches[window]!.upper
        let late = bench.read(at: 9 * mib, size: 128 * 1024)
        #expect(ReadBench.served(late) == [9 * mib..<9 * mib + 128 * kib])
        #expect(bench.state.handles[1]!.nextOffset == 12 * mib && bench.state.handles[1]!.rewound != nil)
        let next = bench.read(at: 12 * mib, size: 128 * 1024)
        #expect(ReadBench.fetched(next).isEmpty)
        #expect(bench.state.fetches[window]?.upper == upper, "its own stream goes on")
        #expect(bench.state.handles[1]!.rewound == nil && bench.state.handles[1]!.streak >= 8)
    }

    // MARK: - The read-ahead left behind yields

    /// A player at 12 MiB with its 16 MiB window on its way (`arrived`
    /// bytes of it came, not yet written; `0`: its head has not come), the
    /// first 1 MiB and 6-12 MiB cached: it played those 6 MiB in order, and
    /// its window went out once its streak had grown.
    private func playingAt12MiB(handles: [UInt64] = [1], arrived: Int64 = 512 * 1024) -> (ReadBench, UInt64) {
        var bench = ReadBench(length: episode, present: [0..<mib, 6 * mib..<12 * mib], handles: handles)
        bench.link = ReadBench.homeLine
        let (id, range) = bench.readInOrder(from: 6 * mib, to: 12 * mib)
        #expect(range == 12 * mib..<28 * mib, "the largest window from the end of the cached bytes")
        if arrived > 0 {
            bench.head(id, range)
            bench.arrive(id, count: Int(arrived))
        }
        return (bench, id)
    }

    @Test func aSeekBackLetsTheWindowLeftBehindYieldOnceItReadsOnThere() {
        var (bench, window) = playingAt12MiB()
        let effects = bench.read(at: 5 * mib, size: 64 * 1024)
        #expect(ReadBench.fetched(effects).first?.lowerBound == 5 * mib, "\(effects)")
        // One read behind could be a read the kernel sent late: nothing yet.
        #expect(bench.state.fetches[window]?.upper == 28 * mib)
        // The next reads on there: the window ends where it has come, the
        // rest is filled later.
        _ = bench.read(at: 5 * mib + 64 * kib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
        #expect(bench.state.deferred.ranges == [12 * mib + 512 * kib..<28 * mib])
    }

    @Test func aJumpBeyondTheWindowsReachLetsItYieldAtOnce() {
        var (bench, window) = playingAt12MiB()
        _ = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
    }

    @Test func aSeekIntoTheCacheLetsItYieldToo() {
        var (bench, window) = playingAt12MiB()
        #expect(ReadBench.served(bench.read(at: 0, size: 64 * 1024)) == [0..<64 * kib])
        #expect(ReadBench.served(bench.read(at: 64 * kib, size: 64 * 1024)) == [64 * kib..<128 * kib])
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
    }

    @Test func aWindowNobodyGotAByteOfIsStoppedAtOnce() {
        var (bench, window) = playingAt12MiB(arrived: 0)
        let jump = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(jump.contains { if case .stop(window) = $0 { true } else { false } }, "\(jump)")
        #expect(bench.state.fetches[window]?.upper == 12 * mib)
    }

    @Test func theWindowKeepsWhatOthersNeed() {
        // Another file is open (its reads may skip what the kernel's page
        // cache holds, so a move cannot be told): nothing is cut. A read of
        // the kernel's waiting on the window keeps its bytes coming.
        var (bench, window) = playingAt12MiB(handles: [1, 2])
        // File 2 plays up to 12 MiB too.
        for offset in stride(from: 12 * mib - 3 * 128 * kib, to: 12 * mib, by: Int(128 * kib)) {
            #expect(ReadBench.fetched(bench.read(2, at: offset)).isEmpty)
        }
        _ = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib)
        var (alone, stream) = playingAt12MiB()
        // The kernel's read-ahead read at 13 MiB waits on the window.
        let waiting = 13 * mib..<13 * mib + 128 * kib
        #expect(ReadBench.fetched(alone.read(at: waiting.lowerBound, size: waiting.count)).isEmpty)
        #expect(alone.state.waiters.map(\.range) == [waiting])
        _ = alone.read(at: 50 * mib, size: 64 * 1024)
        #expect(alone.state.fetches[stream]?.upper == waiting.upperBound)
    }

    @Test func aReaderThatReadsOnOrAFreshOpenCutsNothing() {
        var (bench, window) = playingAt12MiB(handles: [1, 2])
        _ = bench.read(at: 12 * mib, size: 128 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib, "reading on")
        // A second file opened in the cache: not the player's skip.
        _ = bench.read(2, at: 0, size: 64 * 1024)
        _ = bench.read(2, at: 5 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib, "another file's jump keeps this reader's window")
    }

    // MARK: - One window on the link at a time

    @Test func theNextWindowWaitsUntilTheCurrentOneHasAlmostArrived() {
        // A player far into its streak, one 16 MiB window on its way with
        // most of it still to come: a second window would halve its rate.
        var bench = ReadBench(length: episode, present: [0..<5 * mib])
        bench.link = ReadBench.homeLine
        // It played the 5 MiB cached; its window went out as its streak
        // grew, and its first MiB came.
        let (id, window) = bench.readInOrder(from: 0, to: 5 * mib)
        #expect(window == 5 * mib..<21 * mib)
        bench.head(id, window)
        bench.arrive(id, count: Int(mib))
        // Less than a window ahead of the reader: the old rule sent the next.
        #expect(ReadBench.fetched(bench.read(at: 5 * mib + 512 * kib)).isEmpty, "one window on the link")
        // Its last bytes are arriving: the next one goes out now, its
        // round trip paid while they come.
        let overlap = ReadPlan.readAheadOverlap(link: bench.link, tuning: bench.tuning)
        bench.arrive(id, count: Int(window.upperBound - overlap - bench.state.fetches[id]!.received))
        let next = ReadBench.fetched(bench.read(at: 5 * mib + 640 * kib))
        #expect(next.first?.lowerBound == window.upperBound && next.count == 1, "\(next)")
    }
}
