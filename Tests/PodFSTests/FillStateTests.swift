import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The keeper's fills (docs/DESIGN.md, "Offline by policy"): one fetch at a
/// time, each from the first byte neither here nor on its way to the next
/// byte that is, never of a replaced version; readers join them.
@Suite struct FillStateTests {
    private let mib = ReadBench.mib
    private let tuning = EpisodeReader.Tuning()

    @Test func aFillFetchesTheFirstGapToTheNextCachedByte() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib, 6 * mib..<7 * mib])
        let first = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(first) == [mib..<6 * mib])
        // One at a time: none while it is on its way.
        #expect(bench.state.fill(handle: 1, tuning: tuning).isEmpty)
        #expect(bench.state.fillProgress.fetching)
        bench.land(mib..<6 * mib)
        let second = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(second) == [7 * mib..<10 * mib])
        bench.land(7 * mib..<10 * mib)
        #expect(bench.state.fill(handle: 1, tuning: tuning).isEmpty)
        #expect(bench.state.fillProgress == .init(present: 10 * mib, length: 10 * mib, fetching: false, holdsAll: true, streamsWhole: false, openFiles: 1))
    }

    /// The keeper gives way when a reader has another download's episode
    /// open: files the cache opens itself are not a reader's.
    @Test func filesTheCacheOpensItselfAreNotCountedAsOpen() {
        // Every byte cached, and confirmed by this mount's check.
        let bench = ReadBench(length: 10 * mib, present: [0..<10 * mib], handles: [])
        var state = bench.state
        #expect(state.validated && state.handles.isEmpty)
        _ = state.open(
            handle: 1, reply: Episode.OpenToken.fake(), now: bench.now + 1, feedLength: nil, tuning: tuning,
            seenByKernel: false)
        #expect(state.handles.count == 1 && state.fillProgress.openFiles == 0)
        _ = state.open(handle: 2, reply: Episode.OpenToken.fake(), now: bench.now + 2, feedLength: nil, tuning: tuning)
        #expect(state.fillProgress.openFiles == 1)
    }

    /// A scan's fetch ahead (`ScanAhead`): every gap of its ranges at once,
    /// none past a range's end, none over bytes here or on their way.
    @Test func aFillWithinRangesFetchesTheirGapsAndNothingElse() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib / 4], handles: [1, 2])
        // File 2 reads at 256 KiB: its fetch is on its way up to 512 KiB.
        #expect(ReadBench.fetched(bench.read(2, at: mib / 4, size: 4096)) == [mib / 4..<mib / 2])
        let tail = 10 * mib - 8192..<10 * mib
        let effects = bench.state.fill(handle: 1, within: [0..<mib, tail], tuning: tuning)
        #expect(ReadBench.fetched(effects) == [mib / 2..<mib, tail])
        // Asked again, nothing: all of it is on its way.
        #expect(bench.state.fill(handle: 1, within: [0..<mib, tail], tuning: tuning).isEmpty)
        // Past the end is clamped.
        #expect(bench.state.fill(handle: 1, within: [10 * mib..<11 * mib], tuning: tuning).isEmpty)
    }

    /// A host that stitches per request streams an episode whole from byte
    /// 0: a head and a tail of their own would be that stream.
    @Test func aFillWithinRangesOfAnUnstableEpisodeFetchesNothing() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib / 4])
        bench.stitched()
        #expect(bench.state.fill(handle: 1, within: [0..<mib], tuning: tuning).isEmpty)
    }

    @Test func aReaderInAFillsRangeAsksNoMoreThanAJumpsFetch() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        let fill = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(fill) == [mib..<10 * mib])
        // A listener reads in the middle of the fill's range: the bytes
        // are on their way, so it waits for them or jumps, but never asks
        // for bytes the fill brings after them twice over the whole rest.
        let effects = bench.read(2, at: 3 * mib, size: 128 * 1024)
        let asked = ReadBench.fetched(effects).reduce(Int64(0)) { $0 + Int64($1.count) }
        #expect(asked <= tuning.minimumFetch * 4, "a jump's own fetch at most: \(ReadBench.fetched(effects))")
        // And no byte is on its way twice: the fill yielded what the jump
        // asks for, or the jump waits for the fill.
        let ways = bench.state.fetches.values.map { $0.cursor..<max($0.cursor, $0.upper) }
        for (i, a) in ways.enumerated() {
            for b in ways[(i + 1)...] { #expect(!a.overlaps(b), "\(a) and \(b) both on their way") }
        }
    }

    @Test func givingWayEndsAFillWhereItsBytesHaveComeEvenWithTheFileOpen() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        guard case .fetch(let id, _)? = bench.state.fill(handle: 1, tuning: tuning).first else {
            Issue.record("no fill")
            return
        }
        let asked = bench.state.fetches[id]!
        bench.head(id, asked.cursor..<asked.upper)
        bench.arrive(id, count: Int(2 * mib))
        // A player holds the file open (handle 2) but waits for nothing.
        #expect(bench.state.stopFills([id]) == [id])
        #expect(bench.state.fetches[id]?.upper == 3 * mib && bench.state.fetches[id]?.cutShort == true)
        // Once its bytes are on disk, the next fill starts where it ended.
        bench.land(mib..<3 * mib)
        let next = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(next) == [3 * mib..<10 * mib])
    }

    @Test func aFillAReadWaitsForIsNotStopped() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        guard case .fetch(let id, _)? = bench.state.fill(handle: 1, tuning: tuning).first else {
            Issue.record("no fill")
            return
        }
        // A reader of this episode reads on at the fill's front and waits.
        _ = bench.read(2, at: mib, size: 128 * 1024)
        #expect(!bench.state.waiters.isEmpty)
        #expect(bench.state.stopFills([id]).isEmpty)
        #expect(bench.state.fetches[id]?.upper == 10 * mib)
    }

    /// File 1 read 1 MiB of version 1; a read at 5 MiB finds version 2
    /// (in this mount: the origin stitches, and the fetch stops at its
    /// head), and the fetch ends.
    private func replaced(_ bench: inout ReadBench) {
        _ = bench.read(1, at: 5 * mib)
        guard let id = bench.state.fetches.keys.min() else {
            Issue.record("the read fetches")
            return
        }
        bench.head(id, 5 * mib..<6 * mib, etag: "\"v2\"")
        bench.end(id)
        #expect(bench.state.generation == 1 && bench.state.handles[1]?.generation == 0)
        #expect(bench.state.fetches.isEmpty)
    }

    @Test func theKeepersFileOfAReplacedVersionIsSaidSo() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        #expect(bench.state.readsCurrentVersion(1))
        replaced(&bench)
        #expect(!bench.state.readsCurrentVersion(1))
        #expect(!bench.state.readsCurrentVersion(7))
    }

    @Test func aFileOfAReplacedVersionOrUnknownHandleFillsNothing() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        #expect(bench.state.fill(handle: 9, tuning: tuning).isEmpty)
        replaced(&bench)
        #expect(bench.state.fill(handle: 1, tuning: tuning).isEmpty)
        var unsized = ReadBench(length: nil)
        #expect(unsized.state.fill(handle: 1, tuning: tuning).isEmpty)
    }

    @Test func anEpisodeThatStreamsWholeSaysSo() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        #expect(!bench.state.fillProgress.streamsWhole)
        bench.stitched()
        #expect(bench.state.fillProgress.streamsWhole)
    }
}
