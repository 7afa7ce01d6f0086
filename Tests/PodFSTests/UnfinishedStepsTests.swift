import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A version change whose durable steps failed (docs/DESIGN.md, "A durable
/// step that fails"): the episode is stopped, nothing of it is fetched,
/// written or served, until the steps are done.
@Suite struct UnfinishedStepsTests {
    private let mib = ReadBench.mib

    @Test func failedStepsStopTheEpisodeUntilTheyAreDone() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        let waiting = bench.read(1, at: 4 * mib)
        let fetch = try #require(ReadBench.fetched(waiting).first)
        #expect(bench.state.waiters.count == 1)
        let effects = bench.state.stepsFailed(
            [.dropIndexRanges], then: [.fetch(id: 99, range: 0..<mib), .invalidateKernel(pages: true)])
        #expect(ReadBench.failed(effects) == 1, "the waiting read fails")
        #expect(effects.contains { if case .stop = $0 { true } else { false } }, "its fetch stops")
        #expect(ReadBench.fetched(effects).isEmpty, "nothing the change planned is fetched")
        #expect(effects.contains { if case .invalidateKernel = $0 { true } else { false } })
        #expect(bench.state.fetches.isEmpty && bench.state.waiters.isEmpty)
        // Stopped: reads fail, nothing is fetched, no byte is written.
        #expect(ReadBench.failed(bench.read(2, at: 0)) == 1, "even a cached byte is not served")
        #expect(bench.state.fill(handle: 1, tuning: bench.tuning).isEmpty)
        #expect(bench.state.writeTarget(id: 1, generation: 0, range: fetch, step: mib) == nil)
        let open = bench.state.open(handle: 3, reply: .fake(), now: bench.now, feedLength: nil, tuning: bench.tuning)
        #expect(open.contains { if case .answerOpen(_, nil) = $0 { true } else { false } }, "an open gets EIO")
        #expect(bench.state.stepsDue.count == 1)
        // Done: it reads again.
        bench.state.stepsDone()
        #expect(!ReadBench.fetched(bench.read(2, at: 6 * mib)).isEmpty)
        #expect(ReadBench.served(bench.read(1, at: 0)) == [0..<(128 * 1024)])
    }

    @Test func aHeadWhileStoppedIsStale() throws {
        // Opened from the cache while the origin could not be reached.
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], confirmed: false)
        _ = bench.read(at: 4 * mib)
        #expect(!bench.state.fetches.isEmpty)
        _ = bench.state.stepsFailed([.dropIndexRanges], then: [])
        #expect(bench.state.fetches.isEmpty)
        // A fetch registered meanwhile: the mount's check of the episode.
        let started = bench.state.startMountCheck()
        let check = try #require(started)
        let id = check.id
        let (first, last) = (check.range.lowerBound, check.range.upperBound - 1)
        let head = FetchHead(
            status: 206, rangeFirst: first, rangeLast: last, total: 10 * mib, contentLength: 1,
            etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 1000, feedLength: nil, isBackground: true, holdingIndexLock: true)
        let (verdict, _) = bench.state.head(id: id, head, start: first, last: last, total: 10 * mib, context: context)
        #expect(verdict == .stale)
        #expect(bench.state.fetches[id] == nil, "forgotten, so it is not tried again")
    }
}
