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
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.read(at: 4 * mib)
        let id = try #require(bench.state.fetches.keys.first)
        _ = bench.state.stepsFailed([.dropIndexRanges], then: [])
        // A fetch registered meanwhile (a probe of an earlier open, say).
        bench.state.fetches[id] = Episode.FetchProgress(cursor: 4 * mib, upper: 5 * mib, generation: 0)
        let head = FetchHead(
            status: 206, rangeFirst: 4 * mib, rangeLast: 5 * mib - 1, total: 10 * mib, contentLength: mib,
            etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 1000, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let (verdict, _) = bench.state.head(id: id, head, start: 4 * mib, last: 5 * mib - 1, total: 10 * mib, context: context)
        #expect(verdict == .stale)
        #expect(bench.state.fetches[id] == nil, "forgotten, so it is not tried again")
    }
}
