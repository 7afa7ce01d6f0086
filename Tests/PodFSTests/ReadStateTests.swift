import Foundation
import Locking
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The read event of one episode, driven without a mount: what it fetches,
/// what it serves, who waits (guarantees 2, 3, 4 and 5 of docs/DESIGN.md).
@Suite struct ReadStateTests {
    private let mib = ReadBench.mib

    // MARK: - Guarantee 2: one fetch per byte

    @Test func overlappingReadsFetchEachByteOnce() {
        var bench = ReadBench(length: 100 * mib, handles: [1, 2, 3])
        var asked = RangeSet()
        var total: Int64 = 0
        // Three readers jump into the middle at nearby, overlapping offsets.
        for (handle, offset) in [(1, 50 * mib), (2, 50 * mib + 4096), (3, 50 * mib - 8192), (1, 50 * mib + 100_000)] {
            for range in ReadBench.fetched(bench.read(UInt64(handle), at: offset)) {
                #expect(!asked.contains(range.lowerBound), "\(range) asked twice")
                asked.insert(range)
                total += Int64(range.count)
            }
        }
        #expect(asked.count == total, "no byte in two fetches")
        #expect(bench.state.waiters.count == 4)
    }

    @Test func aReadOfBytesOnTheirWayJoinsTheFetch() {
        var bench = ReadBench(length: 10 * mib, handles: [1, 2])
        let first = ReadBench.fetched(bench.read(1, at: 0))
        #expect(!first.isEmpty)
        let second = bench.read(2, at: 0)
        #expect(ReadBench.fetched(second).isEmpty)
        #expect(bench.state.waiters.count == 2)
    }

    @Test func aGapBetweenCachedBytesIsFetchedAloneNotOverTheCache() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib, 2 * mib..<3 * mib])
        let fetched = ReadBench.fetched(bench.read(at: mib - 4096, size: 8192))
        #expect(fetched.first?.lowerBound == mib)
        #expect(fetched.allSatisfy { $0.lowerBound >= mib && $0.upperBound <= 2 * mib })
    }

    // MARK: - Read-ahead

    @Test func aSequentialReaderGrowsItsWindowFourfold() {
        var bench = ReadBench(length: 1024 * mib)
        var offset: Int64 = 0
        var windows: [Int64] = []
        for _ in 0..<6 {
            let effects = bench.read(at: offset)
            let fetched = ReadBench.fetched(effects)
            if let last = fetched.last { windows.append(Int64(last.count)) }
            for range in fetched { bench.land(range) }
            offset += 128 * 1024
        }
        #expect(bench.state.handles[1]?.streak == 7)
        // 1, 4, then 16 MiB, never more than the largest.
        #expect(Array(windows.prefix(3)) == [mib, 4 * mib, 16 * mib], "\(windows)")
        #expect(windows.allSatisfy { $0 <= bench.tuning.maximumWindow })
    }

    @Test func aJumpResetsTheStreak() {
        var bench = ReadBench(length: 1024 * mib)
        for step in 0..<4 { _ = bench.read(at: Int64(step) * 128 * 1024) }
        #expect(bench.state.handles[1]!.streak >= 4)
        _ = bench.read(at: 500 * mib)
        #expect(bench.state.handles[1]?.streak == 0)
        #expect(bench.state.handles[1]?.nextOffset == 500 * mib + 128 * 1024)
    }

    @Test func aJumpFromANearOriginFetchesWhatItAsked() {
        var bench = ReadBench(length: 1024 * mib)
        bench.link.observe(latency: 0.0002)
        let fetched = ReadBench.fetched(bench.read(at: 300 * mib, size: 4096))
        #expect(fetched == [300 * mib..<300 * mib + bench.tuning.jumpFetch])
    }

    @Test func aReopenThatReadsOnKeepsItsStream() {
        var bench = ReadBench(length: 1024 * mib, handles: [1, 2])
        // Reader 1 plays on to 64 MiB, then closes its file.
        let size: Int64 = 128 * 1024
        for step: Int64 in 0..<6 { _ = bench.read(1, at: 64 * mib - (6 - step) * size) }
        #expect(bench.state.handles[1]?.streak == 5)
        _ = bench.state.release(handle: 1, now: bench.now - 1)
        _ = bench.read(2, at: 64 * mib)
        #expect(bench.state.handles[2]?.streak == 6)
        #expect(bench.state.lastStream == nil)
    }

    // MARK: - Guarantee 3: no mixed versions

    @Test func aHandleOfAReplacedVersionReadsEIO() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        // An hour on, another open asks the origin again: a new version.
        bench.now += bench.tuning.revalidateAfter
        let probe = try #require(ReadBench.probes(bench.open(2)).first)
        bench.head(probe.id, probe.range, etag: "\"v2\"")
        // File 1 reads bytes its version never had here.
        let effects = bench.read(at: 5 * mib)
        #expect(ReadBench.failed(effects) == 1)
        #expect(ReadBench.fetched(effects).isEmpty && ReadBench.served(effects).isEmpty)
    }

    @Test func anUnknownHandleReadsEIO() {
        var bench = ReadBench(length: 10 * mib)
        #expect(ReadBench.failed(bench.read(9, at: 0)) == 1)
    }

    // MARK: - Guarantee 4: real sizes

    @Test func aReadPastTheEndIsShortOrEmpty() {
        var bench = ReadBench(length: 1000, present: [0..<1000])
        #expect(ReadBench.served(bench.read(at: 900, size: 4096)) == [900..<1000])
        let empty = bench.read(at: 1000, size: 4096)
        guard case .answerEmpty = empty.first else {
            Issue.record("a read at the end is answered with no bytes: \(empty)")
            return
        }
    }

    @Test func noLengthNoBytes() {
        var bench = ReadBench(length: nil)
        #expect(ReadBench.failed(bench.read(at: 0)) == 1)
    }

    // MARK: - Guarantee 5: offline, cached bytes are served

    @Test func cachedBytesAreServedWithoutAFetch() {
        var bench = ReadBench(length: 10 * mib, present: [0..<10 * mib], confirmed: false)
        #expect(!bench.state.validated)
        let effects = bench.read(at: 5 * mib, size: 4096)
        #expect(ReadBench.served(effects) == [5 * mib..<5 * mib + 4096])
        #expect(ReadBench.fetched(effects).isEmpty)
        #expect(bench.state.waiters.isEmpty)
    }

    // MARK: - The open's probe

    @Test func aProvisionalHandleWaitsForTheFirstResponse() {
        // Nothing cached: the file opens while its probe is on its way.
        var bench = ReadBench(length: 10 * mib, handles: [], confirmed: false)
        bench.open(1, feedLength: 10 * mib)
        #expect(bench.state.isProvisional(1))
        let probe = bench.state.fetches.keys.sorted()
        #expect(bench.read(at: 0).isEmpty)
        #expect(bench.state.earlyReads.count == 1)
        #expect(bench.state.fetches.keys.sorted() == probe, "no fetch but the probe")
    }
}
