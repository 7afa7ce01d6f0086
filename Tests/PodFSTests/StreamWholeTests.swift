import RangeCache
import Testing

@testable import PodFS

/// Unstable origins are streamed whole (docs/DESIGN.md, "Episodes and
/// their variants"): one sequential response from the end of the cached
/// prefix, reads ahead of it wait for it.
@Suite struct StreamWholeTests {
    private let mib = ReadBench.mib

    @Test func anUnstableEpisodeIsFetchedAsOneStreamFromItsCachedPrefix() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        bench.state.unstable = "the length changed between requests"
        let planned = bench.read(1, at: 5 * mib)
        var state = bench.state
        let effects = state.streamingWhole(planned)
        #expect(ReadBench.fetched(effects) == [mib..<(10 * mib)], "one stream, from the cached prefix to the end")
        #expect(state.fetches.count == 1)
        // A seek further ahead waits for the stream: no second request.
        let later = state.read(
            handle: 2, offset: 8 * mib, size: 4096, reply: FakeDataReply(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        #expect(ReadBench.fetched(state.streamingWhole(later)).isEmpty)
        #expect(state.fetches.count == 1)
        #expect(state.waiters.count == 2, "both reads wait for the stream")
    }

    @Test func aSeekFarAheadNeverCutsTheStreamOfAnUnstableEpisode() throws {
        // A measured link on which a stable episode's read would jump (see
        // JoinOrJumpTests): 1 MB/s, 50 ms.
        var bench = ReadBench(length: 64 * mib, present: [0..<mib], handles: [1, 2])
        bench.state.unstable = "the length changed between requests"
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.05)
        bench.link.observe(bytes: 1_000_000, in: 1)
        var state = bench.state
        _ = state.streamingWhole(bench.read(1, at: mib))
        let stream = try #require(state.streamID)
        let far = state.read(
            handle: 2, offset: 40 * mib, size: 4096, reply: FakeDataReply(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        let effects = state.streamingWhole(far)
        #expect(ReadBench.fetched(effects).isEmpty, "no ranged request of its own: it would be another variant")
        #expect(!effects.contains { if case .stop = $0 { true } else { false } }, "the stream is not stopped")
        #expect(state.fetches[stream]?.upper == 64 * mib, "the stream still runs to the end")
        #expect(state.deferred.isEmpty)
        #expect(state.fillFetch() == nil)
    }

    @Test func aStableEpisodeKeepsItsPlan() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        let planned = bench.read(at: 5 * mib)
        var state = bench.state
        #expect(ReadBench.fetched(state.streamingWhole(planned)) == ReadBench.fetched(planned))
    }

    @Test func aStreamThatEndedIsStartedAgainFromTheNewPrefix() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        bench.state.unstable = "bytes fetched again did not match the cached ones"
        let planned = bench.read(at: 5 * mib)
        var state = bench.state
        _ = state.streamingWhole(planned)
        let first = try #require(state.streamID)
        state.fetches[first] = nil
        state.present.insert(mib..<(3 * mib))
        let again = state.read(
            handle: 1, offset: 6 * mib, size: 4096, reply: FakeDataReply(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        #expect(ReadBench.fetched(state.streamingWhole(again)) == [(3 * mib)..<(10 * mib)])
    }
}
