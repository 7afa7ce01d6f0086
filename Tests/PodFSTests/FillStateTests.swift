import RangeCache
import Testing

@testable import PodFS

/// The keeper's fills (docs/DESIGN.md, "Offline by policy"): one fetch at a
/// time, each from the first byte neither here nor on its way to the next
/// byte that is, never of a replaced version; readers join them.
@Suite struct FillStateTests {
    private let mib = ReadBench.mib
    private let tuning = EpisodeReader.Tuning()

    @Test func aFillFetchesTheFirstGapToTheNextCachedByte() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib, 6 * mib..<7 * mib])
        let first = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(first.map { [$0] } ?? []) == [mib..<6 * mib])
        // One at a time: none while it is on its way.
        #expect(bench.state.fill(handle: 1, tuning: tuning) == nil)
        #expect(bench.state.fillProgress.fetching)
        bench.land(mib..<6 * mib)
        let second = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(second.map { [$0] } ?? []) == [7 * mib..<10 * mib])
        bench.land(7 * mib..<10 * mib)
        #expect(bench.state.fill(handle: 1, tuning: tuning) == nil)
        #expect(bench.state.fillProgress == .init(present: 10 * mib, length: 10 * mib, fetching: false, holdsAll: true, streamsWhole: false))
    }

    @Test func aReaderInAFillsRangeAsksNoMoreThanAJumpsFetch() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        let fill = bench.state.fill(handle: 1, tuning: tuning)
        #expect(ReadBench.fetched(fill.map { [$0] } ?? []) == [mib..<10 * mib])
        // A listener reads in the middle of the fill's range: the bytes
        // are on their way, so it waits for them or jumps, but never asks
        // for bytes the fill brings after them twice over the whole rest.
        let effects = bench.read(2, at: 3 * mib, size: 128 * 1024)
        let asked = ReadBench.fetched(effects).reduce(Int64(0)) { $0 + Int64($1.count) }
        #expect(asked <= tuning.minimumFetch * 4, "a jump's own fetch at most: \(ReadBench.fetched(effects))")
    }

    @Test func aFileOfAReplacedVersionOrUnknownHandleFillsNothing() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        #expect(bench.state.fill(handle: 9, tuning: tuning) == nil)
        bench.state.handles[1]?.generation = bench.state.generation &+ 1
        #expect(bench.state.fill(handle: 1, tuning: tuning) == nil)
        var unsized = ReadBench(length: 10 * mib)
        unsized.state.length = nil
        #expect(unsized.state.fill(handle: 1, tuning: tuning) == nil)
    }

    @Test func anEpisodeThatStreamsWholeSaysSo() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        bench.state.unstable = "no validator"
        #expect(bench.state.fillProgress.streamsWhole)
    }
}
