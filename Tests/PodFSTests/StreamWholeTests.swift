import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Unstable origins are streamed whole (docs/DESIGN.md, "Episodes and
/// their variants"): one sequential response from the end of the cached
/// prefix, reads ahead of it wait for it.
@Suite struct StreamWholeTests {
    private let mib = ReadBench.mib

    @Test func anUnstableEpisodeIsFetchedAsOneStreamFromItsCachedPrefix() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        bench.stitched()
        let effects = bench.read(1, at: 5 * mib)
        var state = bench.state
        #expect(ReadBench.fetched(effects) == [mib..<(10 * mib)], "one stream, from the cached prefix to the end")
        #expect(state.fetches.count == 1)
        // A seek further ahead waits for the stream: no second request.
        let later = state.read(
            handle: 2, offset: 8 * mib, size: 4096, reply: Episode.ReadToken.fake(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        #expect(ReadBench.fetched(later).isEmpty)
        #expect(state.fetches.count == 1)
        #expect(state.waiters.count == 2, "both reads wait for the stream")
    }

    @Test func aSeekFarAheadNeverCutsTheStreamOfAnUnstableEpisode() throws {
        // A measured link on which a stable episode's read would jump (see
        // JoinOrJumpTests): 1 MB/s, 50 ms.
        var bench = ReadBench(length: 64 * mib, present: [0..<mib], handles: [1, 2])
        bench.stitched()
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.05)
        bench.link.observe(bytes: 1_000_000, in: 1)
        _ = bench.read(1, at: mib)
        var state = bench.state
        let stream = try #require(state.streamID)
        let far = state.read(
            handle: 2, offset: 40 * mib, size: 4096, reply: Episode.ReadToken.fake(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        let effects = far
        #expect(ReadBench.fetched(effects).isEmpty, "no ranged request of its own: it would be another variant")
        #expect(!effects.contains { if case .stop = $0 { true } else { false } }, "the stream is not stopped")
        #expect(state.fetches[stream]?.upper == 64 * mib, "the stream still runs to the end")
        #expect(state.deferred.isEmpty)
        #expect(state.fillFetch() == nil)
    }

    /// An unstable episode's stream at 2 MiB of 64, on a measured link of
    /// 1 MB/s and 50 ms; file 2 waits for it at 4 MiB. `flowing`: it has
    /// brought 2 MB in the last 2 s, the last just now; else nothing yet.
    private func waitingOnTheStream(flowing: Bool = true) throws -> (ReadBench, UInt64) {
        var bench = ReadBench(length: 64 * mib, present: [0..<2 * mib], handles: [1, 2])
        bench.stitched()
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.05)
        bench.link.observe(bytes: 1_000_000, in: 1)
        _ = bench.read(1, at: 2 * mib)
        let stream = try #require(bench.state.streamID)
        if flowing {
            _ = bench.state.bodyArrived(id: stream, count: 1_000_000, now: bench.now - 2)
            _ = bench.state.bodyArrived(id: stream, count: 1_000_000, now: bench.now)
        }
        _ = bench.read(2, at: 4 * mib, size: 4096)
        #expect(bench.state.recheckArmed, "judged again while it waits")
        return (bench, stream)
    }

    @Test func aFlowingStreamIsWaitedFor() throws {
        var (bench, stream) = try waitingOnTheStream()
        bench.now += 0.5
        let effects = bench.recheck()
        #expect(ReadBench.fetched(effects).isEmpty)
        #expect(bench.state.streamID == stream)
        #expect(effects.contains { if case .recheck = $0 { true } else { false } }, "armed again")
    }

    @Test func aSecondWholeStreamStartsWhenItWouldBeSooner() throws {
        // The stream brought nothing for 20 s: a new one from byte 0 brings
        // 4 MiB in about 4.2 s.
        var (bench, stream) = try waitingOnTheStream()
        bench.now += 20
        let effects = bench.recheck()
        #expect(ReadBench.fetched(effects) == [0..<64 * mib], "a second whole stream, from byte 0")
        #expect(effects.contains { if case .stop(stream) = $0 { true } else { false } }, "the first one stops")
        let second = try #require(bench.state.streamID)
        #expect(second != stream && bench.state.fetches[stream] == nil)
        // Its head replaces the variant: cached bytes of the first go.
        #expect(bench.state.restartsStream(id: second))
    }

    /// A host whose shows stitch is read only by whole streams, so its
    /// bodies may have told no rate yet (one `LinkEstimate` per host): a
    /// stalled stream is judged at the rate it had while it flowed.
    @Test func aStalledStreamIsReplacedWhenItsHostToldNoRateYet() throws {
        var bench = ReadBench(length: 64 * mib, present: [0..<2 * mib], handles: [1, 2])
        bench.stitched()
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.05)
        _ = bench.read(1, at: 2 * mib)
        let stream = try #require(bench.state.streamID)
        _ = bench.state.bodyArrived(id: stream, count: 1_000_000, now: bench.now - 2)
        _ = bench.state.bodyArrived(id: stream, count: 1_000_000, now: bench.now)
        _ = bench.read(2, at: 4 * mib, size: 4096)
        bench.now += 0.5
        #expect(ReadBench.fetched(bench.recheck()).isEmpty, "a flowing stream is waited for")
        bench.now += 20
        #expect(ReadBench.fetched(bench.recheck()) == [0..<64 * mib], "a second whole stream, from byte 0")
    }

    @Test func aStreamThatHasBroughtNothingYetIsJudgedOnceItFlows() throws {
        var (bench, stream) = try waitingOnTheStream(flowing: false)
        bench.now += 0.5
        let first = bench.recheck()
        #expect(ReadBench.fetched(first).isEmpty, "left to the connection's timeouts")
        #expect(first.contains { if case .recheck = $0 { true } else { false } } && bench.state.recheckArmed)
        // It brought its first bytes, then stalled for 20 s.
        _ = bench.state.bodyArrived(id: stream, count: 0, now: bench.now)
        bench.now += 20
        #expect(ReadBench.fetched(bench.recheck()) == [0..<64 * mib])
        #expect(!bench.state.recheckArmed, "no timer is on its way")
    }

    @Test func aHiccupOfTheLinkIsNoReasonForAnotherVariant() throws {
        // Early in a stream a second one would be sooner after 0.2 s of
        // silence, but it would fail the reads of files open on the first.
        // Nothing cached: the stream runs from byte 0 and has brought its
        // first 64 KiB, just now; file 2 waits for it at 4 MiB.
        var bench = ReadBench(length: 64 * mib, handles: [1, 2])
        bench.stitched()
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.05)
        bench.link.observe(bytes: 1_000_000, in: 1)
        #expect(ReadBench.fetched(bench.read(1, at: 0)) == [0..<64 * mib])
        let stream = try #require(bench.state.streamID)
        bench.head(stream, 0..<64 * mib)
        bench.land(0..<64 * 1024)
        #expect(bench.state.fetches[stream]?.received == 64 * 1024 && bench.state.fetches[stream]?.cursor == 64 * 1024)
        _ = bench.read(2, at: 4 * mib, size: 4096)
        #expect(bench.state.recheckArmed, "judged again while it waits")
        bench.now += 1
        #expect(ReadBench.fetched(bench.recheck()).isEmpty)
        #expect(bench.state.streamID == stream)
        #expect(JoinOrJump.secondStreamSooner(
            position: 4 * mib, received: 64 * 1024, need: 4096, streamRate: nil, silence: 4.9, rate: 1e6, roundTrip: 0.05
        ) == false)
        #expect(JoinOrJump.secondStreamSooner(
            position: 4 * mib, received: 64 * 1024, need: 4096, streamRate: nil, silence: 5, rate: 1e6, roundTrip: 0.05))
    }

    @Test func aStableEpisodeKeepsItsPlan() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        #expect(ReadBench.fetched(bench.read(at: 5 * mib)).first?.lowerBound == 5 * mib, "a jump's own fetch, no stream")
        #expect(bench.state.streamID == nil)
    }

    @Test func aStreamThatEndedIsStartedAgainFromTheNewPrefix() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        bench.stitched()
        _ = bench.read(at: 5 * mib)
        let first = try #require(bench.state.streamID)
        // It brought 2 MiB, then its attempts ran out.
        bench.head(first, mib..<10 * mib)
        bench.land(mib..<(3 * mib))
        let reset = FetchError(isTransient: true, isUnreachable: false, message: "connection reset")
        bench.end(first, error: reset, attempt: bench.tuning.attempts)
        var state = bench.state
        #expect(state.fetches[first] == nil && state.present.ranges == [0..<3 * mib])
        let again = state.read(
            handle: 1, offset: 6 * mib, size: 4096, reply: Episode.ReadToken.fake(),
            context: .init(now: bench.now, wallClock: 0, link: bench.link, tuning: bench.tuning))
        #expect(ReadBench.fetched(again) == [(3 * mib)..<(10 * mib)])
    }
}
