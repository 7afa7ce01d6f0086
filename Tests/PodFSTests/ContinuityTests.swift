import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The overlap check (docs/DESIGN.md, "Episodes and their variants"): a
/// fetch that continues cached bytes starts a little before them, the
/// writer compares those bytes, and a mismatch drops every cached byte of
/// the episode and marks its origin unstable.
@Suite struct ContinuityTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024

    private func fetches(_ effects: [Episode.State.Effect]) -> [Range<Int64>] {
        ReadBench.fetched(effects)
    }

    @Test func aFetchRightAfterCachedBytesStartsAFewKiBBeforeThem() throws {
        var bench = ReadBench(length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<mib])
        // The read event widens its own fetch (`guardingVariants`).
        let widened = bench.read(at: mib)
        var state = bench.state
        let range = try #require(fetches(widened).first)
        #expect(range.lowerBound == mib - 4 * kib)
        #expect(range.upperBound > mib + 64 * kib, "the read-ahead past the read, as planned")
        let id = try #require(state.fetches.keys.min())
        #expect(state.fetches[id]?.checkUpTo == mib)
        // The writer holds exactly the overlap of what arrives.
        let target = state.writeTarget(id: id, generation: 0, range: (mib - 4 * kib)..<(mib + 60 * kib), step: 8 * mib)
        #expect(target?.check == (mib - 4 * kib)..<mib)
        let later = state.writeTarget(id: id, generation: 0, range: (mib + 60 * kib)..<(mib + 120 * kib), step: 8 * mib)
        #expect(later != nil && later?.check == nil)
    }

    @Test func theOverlapNeverReachesBeforeTheCachedRun() throws {
        var bench = ReadBench(
            length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<kib, mib..<(mib + kib)])
        let widened = bench.read(at: mib + kib)
        #expect(fetches(widened).first?.lowerBound == mib)
    }

    @Test func aFetchAfterAHoleIsNotWidened() throws {
        var bench = ReadBench(length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<mib])
        #expect(fetches(bench.read(at: 5 * mib)).first?.lowerBound == 5 * mib)
    }

    @Test func withoutAStrongValidatorAWindowAfterOneOnItsWayOverlapsItToo() throws {
        var bench = ReadBench(
            length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<(256 * kib)],
            handles: [1, 2])
        let first = bench.read(at: 256 * kib)
        let window = try #require(fetches(first).first)
        #expect(window.lowerBound == 252 * kib, "after cached bytes")
        // With a strong ETag the origin's If-Range vouches: not widened.
        var strong = ReadBench(length: 10 * mib, present: [0..<(256 * kib)], handles: [1, 2])
        let strongWindow = try #require(fetches(strong.read(at: 256 * kib)).first)
        #expect(strongWindow.lowerBound == 256 * kib)
        // A second reader's fetch starts where the first one ends.
        let chained = try #require(fetches(bench.read(2, at: window.upperBound, size: 4096)).first)
        #expect(chained.lowerBound == window.upperBound - 4 * kib && chained.upperBound > window.upperBound)
        let vouched = try #require(fetches(strong.read(2, at: strongWindow.upperBound, size: 4096)).first)
        #expect(vouched.lowerBound == strongWindow.upperBound)
    }

    @Test func heldOverlapBytesAreComparedOnceTheBytesTheyOverlapAreOnDisk() throws {
        var bench = ReadBench(
            length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<mib], handles: [1, 2])
        let window = try #require(fetches(bench.read(at: mib)).first)
        // File 2 reads where that fetch ends: its fetch continues bytes on
        // their way, up to where they end.
        let end = window.upperBound
        _ = bench.read(2, at: end, size: 4096)
        var state = bench.state
        let id = try #require(state.fetches.keys.max())
        #expect(state.fetches[id]?.checkUpTo == end && state.fetches[id]?.cursor == end - 4 * kib)
        let overlap = (end - 4 * kib)..<end
        let held = state.hold(id: id, generation: 0, range: overlap, bytes: Array(repeating: 7, count: 4096))
        #expect(held)
        let early = state.takeComparableOverlaps()
        #expect(early.isEmpty, "not on disk yet")
        let taken = state.takeComparableOverlaps(written: (end - 512 * kib)..<end)
        #expect(taken.count == 1 && taken.first?.offset == overlap.lowerBound && taken.first?.bytes.count == 4096)
        let again = state.takeComparableOverlaps(written: (end - 512 * kib)..<end)
        #expect(again.isEmpty, "taken once")
    }

    @Test func aMismatchDropsEveryCachedByteAndMarksTheOriginOnce() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1])
        _ = bench.read(at: mib)
        var state = bench.state
        let id = try #require(state.fetches.keys.min())
        let broken = state.continuityBroken(id: id)
        let transition = try #require(broken)
        let (durable, then) = (transition.durable, transition.then)
        guard case .dropIndexRanges = durable.first else {
            Issue.record("the index forgets the ranges first: \(durable)")
            return
        }
        #expect(state.present.isEmpty)
        #expect(state.fetches[id] == nil, "the response of another variant stops")
        #expect(state.generation == 1)
        #expect(state.unstable == Episode.State.overlapMismatch)
        #expect(then.contains { if case .markUnstable = $0 { true } else { false } })
        #expect(then.filter { if case .fail = $0 { true } else { false } }.count == 1)
        let again = state.continuityBroken(id: id)
        #expect(again == nil, "stale")
    }
}
