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
            length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<(256 * kib)])
        let first = bench.read(at: 256 * kib)
        var state = bench.state
        let window = try #require(fetches(first).first)
        #expect(window.lowerBound == 252 * kib, "after cached bytes")
        // With a strong ETag the origin's If-Range vouches: not widened.
        var strong = ReadBench(length: 10 * mib, present: [0..<(256 * kib)])
        #expect(fetches(strong.read(at: 256 * kib)).first?.lowerBound == 256 * kib)
        // A second fetch planned to start where the first one ends.
        let id = state.takeFetchID()
        state.fetches[id] = Episode.FetchProgress(cursor: window.upperBound, upper: window.upperBound + mib, generation: 0)
        let chained = state.guardingVariants([.fetch(id: id, range: window.upperBound..<(window.upperBound + mib))])
        #expect(fetches(chained) == [(window.upperBound - 4 * kib)..<(window.upperBound + mib)])
        state.current.tell(length: 10 * mib, etag: "\"strong\"", lastModified: nil)
        state.fetches[id] = Episode.FetchProgress(cursor: window.upperBound, upper: window.upperBound + mib, generation: 0)
        let vouched = state.guardingVariants([.fetch(id: id, range: window.upperBound..<(window.upperBound + mib))])
        #expect(fetches(vouched) == [window.upperBound..<(window.upperBound + mib)])
    }

    @Test func heldOverlapBytesAreComparedOnceTheBytesTheyOverlapAreOnDisk() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        let planned = bench.read(at: 2 * mib)
        var state = bench.state
        let id = try #require(state.fetches.keys.min())
        // As if this fetch continued bytes on their way (checkUpTo 2 MiB).
        state.fetches[id]?.checkUpTo = 2 * mib
        _ = planned
        let overlap = (2 * mib - 4 * kib)..<(2 * mib)
        let held = state.hold(id: id, generation: 0, range: overlap, bytes: Array(repeating: 7, count: 4096))
        #expect(held)
        let early = state.takeComparableOverlaps()
        #expect(early.isEmpty, "not on disk yet")
        let taken = state.takeComparableOverlaps(written: (mib + 512 * kib)..<(2 * mib))
        #expect(taken.count == 1 && taken.first?.offset == overlap.lowerBound && taken.first?.bytes.count == 4096)
        let again = state.takeComparableOverlaps(written: (mib + 512 * kib)..<(2 * mib))
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
