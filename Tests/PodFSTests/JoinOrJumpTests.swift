import Foundation
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Join or jump, and the listener first (docs/DESIGN.md, "Join or jump"): a
/// read joins a fetch on its way only when that fetch brings its bytes
/// sooner than a request of its own; otherwise it fetches at once, the
/// stream yields, and what the stream gave up is fetched later, each byte
/// once (guarantee 2).
@Suite struct JoinOrJumpTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024
    /// A player's hour-long MP3.
    private let episode: Int64 = 57_601_088

    /// A link 50 ms away each way at 100 MB/s: far and fast, its
    /// read-ahead window the largest (`ReadTuning.maximumLinkWindow`).
    private var farAndFast: LinkEstimate {
        var link = LinkEstimate()
        link.observe(latency: 0.05)
        link.observe(bytes: 100_000_000, in: 1)
        return link
    }

    /// A player that read the first 2 MiB of a cold episode from its start,
    /// in order, while one fetch streams the rest: the link looked far and
    /// fast when it began (its read-ahead asked the rest of the episode at
    /// once) and has been measured as the home line since. The stream's
    /// head came and it has brought `arrived` bytes past 2 MiB, not yet
    /// written (`0`: its head has not come).
    private func streaming(
        handles: [UInt64] = [1], etag: String? = "\"v1\"", lastModified: String? = nil, arrived: Int64 = 64 * 1024
    ) -> (ReadBench, UInt64) {
        var bench = ReadBench(
            length: episode, etag: etag, lastModified: lastModified, present: [0..<2 * mib], handles: handles)
        bench.link = farAndFast
        let (id, range) = bench.readInOrder(from: 0, to: 2 * mib)
        bench.link = ReadBench.homeLine
        #expect(range.upperBound == episode, "the read-ahead asked the rest: \(range)")
        if arrived > 0 {
            bench.head(id, range)
            bench.arrive(id, count: Int(2 * mib + arrived - range.lowerBound))
        }
        return (bench, id)
    }

    // MARK: - The state machine: a stream that stalls is judged again

    /// Listener 2 opens and reads just ahead of the flowing stream: it
    /// joins. Returns the bench, the stream and the read's bytes.
    private func joinedJustAhead() -> (ReadBench, UInt64, Range<Int64>) {
        var (bench, stream) = streaming(handles: [1, 2])
        // A second on, the stream has brought 2 MB more: it flows at the
        // link's rate.
        bench.now += 1
        bench.arrive(stream, count: 2_000_000)
        let position = bench.state.fetches[stream]!.received + 100_000
        let effects = bench.read(2, at: position, size: 64 * 1024)
        #expect(ReadBench.fetched(effects).isEmpty, "it joined the stream: \(effects)")
        #expect(rechecks(effects).count == 1, "and is judged again later: \(effects)")
        return (bench, stream, position..<position + 64 * 1024)
    }

    @Test func aReadThatJoinedAStreamThatStalledGetsAFetchOfItsOwn() {
        var (bench, stream, wanted) = joinedJustAhead()
        // The origin holds the stream: nothing for a second.
        bench.now += 1
        let effects = bench.recheck()
        let fetched = ReadBench.fetched(effects)
        #expect(fetched.first?.lowerBound == wanted.lowerBound, "the read fetches its own bytes: \(effects)")
        #expect(bench.state.fetches[stream]!.upper <= wanted.lowerBound, "the stalled stream yielded")
        // Its own short fetch is not a stream: nothing more to judge.
        #expect(rechecks(effects).isEmpty)
        #expect(!bench.state.recheckArmed)
        let pending = bench.state.pending
        #expect(bench.state.available.gaps(in: wanted).allSatisfy { pending.contains($0) })
    }

    @Test func aReadThatJoinedAFlowingStreamStaysWithIt() {
        var (bench, stream, _) = joinedJustAhead()
        // Bytes keep coming, just not these yet.
        bench.now += 0.049
        bench.arrive(stream, count: 16 * 1024)
        bench.now += 0.001
        let effects = bench.recheck()
        #expect(ReadBench.fetched(effects).isEmpty && bench.state.deferred.isEmpty, "\(effects)")
        #expect(rechecks(effects).count == 1, "still waiting on the stream: judged again later")
    }

    @Test func aReadWaitingForAHeadThatNeverComesGetsAFetchOfItsOwn() {
        // The stream's request is held before its head: no byte ever came.
        var (bench, stream) = streaming(handles: [1, 2], arrived: 0)
        // Listener 1 closed its file: nobody else needs the stream. Half a
        // minute on (a reopen no longer continues its stream), listener 2
        // reads just ahead.
        _ = bench.state.release(handle: 1, now: bench.now)
        bench.now += ReadPlan.reopenGrace + 1
        let effects = bench.read(2, at: 2 * mib + 128 * kib, size: 64 * 1024)
        #expect(ReadBench.fetched(effects).isEmpty && rechecks(effects).count == 1, "\(effects)")
        bench.now += 0.5
        let later = bench.recheck()
        #expect(ReadBench.fetched(later).first?.lowerBound == 2 * mib + 128 * kib, "\(later)")
        // Nobody got any of its bytes, and the read's own wait does not
        // keep it: it stops now, the bytes before the read deferred.
        #expect(later.contains { if case .stop(stream) = $0 { true } else { false } }, "\(later)")
        #expect(bench.state.deferred.ranges.first?.lowerBound == 2 * mib)
    }

    @Test func aReaderThatReadsOnIsNotJudgedAgain() {
        var (bench, _) = streaming()
        let effects = bench.read(1, at: 2 * mib + 128 * kib, size: 128 * 1024)
        #expect(rechecks(effects).isEmpty)
        bench.now += 10
        #expect(bench.recheck().isEmpty, "a reader that reads on stays with its stream")
    }

    @Test func oneRecheckIsArmedAtATime() {
        var (bench, _, wanted) = joinedJustAhead()
        let second = bench.read(2, at: wanted.upperBound + 4096, size: 4096)
        #expect(rechecks(second).isEmpty, "one is on its way already: \(second)")
    }

    // MARK: - The state machine: the stream yields

    @Test func aSeekFarAheadStartsItsOwnFetchAndTheStreamYields() {
        var (bench, stream) = streaming()
        let seek: Int64 = 20 * mib
        let effects = bench.read(at: seek, size: 64 * 1024)
        let fetched = ReadBench.fetched(effects)
        #expect(fetched.first?.lowerBound == seek, "the read fetches from where it jumped: \(fetched)")
        // The stream ends where it has come: nobody else reads there.
        let kept = bench.state.fetches[stream]!
        #expect(kept.upper == 2 * mib + 64 * kib && kept.cutShort)
        #expect(bench.state.deferred.ranges == [2 * mib + 64 * kib..<episode])
        // One fetch per byte: nothing asked twice.
        for range in fetched { #expect(!range.overlaps(kept.cursor..<kept.upper)) }
        #expect(bench.state.waiters.count == 1)
    }

    @Test func aSeekWithinTheStreaksReachStillJumps() {
        // 10 MiB on is within a 16 MiB window's reach, so the streak goes
        // on; but the reader did not read on from where it stopped.
        var (bench, stream) = streaming()
        let streak = bench.state.handles[1]!.streak
        let fetched = ReadBench.fetched(bench.read(at: 12 * mib, size: 64 * 1024))
        #expect(bench.state.handles[1]!.streak > streak, "the streak goes on")
        #expect(fetched.first?.lowerBound == 12 * mib, "\(fetched)")
        #expect(bench.state.fetches[stream]?.upper == 2 * mib + 64 * kib)
    }

    @Test func aReadTheStreamBringsSoonJoinsIt() {
        var (bench, stream) = streaming()
        let effects = bench.read(at: 2 * mib + 128 * kib)
        #expect(ReadBench.fetched(effects).isEmpty)
        #expect(bench.state.fetches[stream]?.upper == episode && bench.state.deferred.isEmpty)
    }

    @Test func aStreamHeldBackIsJudgedByItsOwnRate() {
        // A fast link, but this stream brought 1 MiB in its first second
        // and nothing since: 7 MiB on would take it seconds.
        var (bench, stream) = streaming(handles: [1, 2])
        // Listener 1 closed its file; listener 2 opens and seeks.
        _ = bench.state.release(handle: 1, now: bench.now)
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.01)
        bench.link.observe(bytes: 1_000_000_000, in: 1)
        var flowing = bench
        bench.now += 1
        bench.arrive(stream, count: Int(3 * mib - bench.state.fetches[stream]!.received))
        _ = bench.read(2, at: 10 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == 3 * mib, "a stream held back yields")
        // The same stream flowing at the link's rate (the same bytes in a
        // millisecond) is joined.
        flowing.now += 0.001
        flowing.arrive(stream, count: Int(3 * mib - flowing.state.fetches[stream]!.received))
        #expect(ReadBench.fetched(flowing.read(2, at: 10 * mib, size: 64 * 1024)).isEmpty)
        #expect(flowing.state.fetches[stream]?.upper == episode)
    }

    @Test func anotherListenerInsideTheStreamKeepsItsWindow() {
        var (bench, stream) = streaming(handles: [1, 2])
        // Listener 2 plays at 2 MiB too (four reads in order up to
        // there); listener 1 jumps.
        for offset in stride(from: 2 * mib - 4 * 128 * kib, to: 2 * mib, by: Int(128 * kib)) {
            #expect(ReadBench.fetched(bench.read(2, at: offset)).isEmpty)
        }
        let streak = bench.state.handles[2]!.streak
        #expect(streak > 0)
        _ = bench.read(1, at: 30 * mib, size: 64 * 1024)
        let window = ReadPlan.window(streak: streak, link: bench.link, tuning: bench.tuning)
        #expect(bench.state.fetches[stream]?.upper == 2 * mib + window)
        #expect(bench.state.deferred.ranges.first?.lowerBound == 2 * mib + window)
    }

    @Test func aWaitingReaderKeepsTheBytesItWaitsFor() {
        var (bench, stream) = streaming(handles: [1, 2])
        // Listener 2 reads just ahead of the stream and waits on it.
        let waiting = 2 * mib + 100 * kib..<2 * mib + 228 * kib
        #expect(ReadBench.fetched(bench.read(2, at: waiting.lowerBound, size: waiting.count)).isEmpty)
        #expect(bench.state.waiters.map(\.range) == [waiting])
        _ = bench.read(1, at: 40 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == waiting.upperBound)
    }

    @Test func aReaderWaitingPastTheJumpStillGetsEveryByte() {
        // A read waits for 1 MiB the stream would bring; reader 2 jumps
        // into the middle of it. The stream is cut at the jump, the jump's
        // own fetch covers only its window: the rest of the waiting read's
        // bytes must still be on their way (a stress run failed such a read).
        var (bench, stream) = streaming(handles: [1, 2, 3])
        // Listener 3 read there while the link was measured fast enough
        // for the stream to bring it sooner: it waits on the stream.
        let waiting = 20 * mib..<21 * mib
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.1)
        bench.link.observe(bytes: 1_000_000_000, in: 1)
        #expect(ReadBench.fetched(bench.read(3, at: waiting.lowerBound, size: waiting.count)).isEmpty)
        #expect(bench.state.waiters.map(\.range) == [waiting])
        bench.link = ReadBench.homeLine
        let effects = bench.read(2, at: 20 * mib + 64 * kib, size: 4096)
        #expect(bench.state.fetches[stream]!.upper <= 20 * mib + 64 * kib, "the stream yielded")
        let pending = bench.state.pending
        for waiter in bench.state.waiters {
            let missing = bench.state.available.gaps(in: waiter.range)
            #expect(missing.allSatisfy { pending.contains($0) }, "\(waiter.range) waits for bytes nobody brings")
        }
        // One fetch per byte all the same.
        let fetched = ReadBench.fetched(effects)
        for (index, range) in fetched.enumerated() {
            for other in fetched[(index + 1)...] { #expect(!range.overlaps(other)) }
            let kept = bench.state.fetches[stream]!
            #expect(!range.overlaps(kept.cursor..<kept.upper))
        }
    }

    @Test func aShortFetchForAWaitingReaderNeverYields() {
        var bench = ReadBench(length: episode)
        bench.link = ReadBench.homeLine
        _ = bench.read(at: 10 * mib, size: 4096)
        let probe = bench.state.fetches.first!
        #expect(probe.value.answersOnArrival)
        _ = bench.read(at: 10 * mib + 200 * kib, size: 4096)
        #expect(bench.state.fetches[probe.key]?.upper == probe.value.upper && bench.state.deferred.isEmpty)
    }

    // MARK: - The gap is filled later, each byte once

    @Test func theGapIsFilledWhenNothingElseIsOnItsWay() {
        var (bench, stream) = streaming()
        let seek: Int64 = 20 * mib
        let jump = ReadBench.fetched(bench.read(at: seek, size: 64 * 1024))
        // The stream delivers what it kept and stops on purpose.
        let kept = bench.state.fetches[stream]!
        let arrival = bench.state.bodyArrived(id: stream, count: 512 * 1024)
        #expect(arrival?.yielded == true && arrival?.count == 0, "nothing past the cut")
        bench.write(stream, kept.cursor..<kept.upper)
        let aborted = FetchError(isTransient: true, isUnreachable: false, message: "aborted")
        let (end, failure) = bench.state.fetchEnded(id: stream, error: aborted, attempt: 1, tuning: bench.tuning)
        guard case .settle = end else {
            Issue.record("a stream that yielded is not retried: \(end)")
            return
        }
        #expect(failure == nil)
        // The jump's fetch is still on its way: no fill yet.
        let early = bench.state.fetchSettled(id: stream, failure: nil, isBackground: false, minimumFetch: 256 * kib)
        #expect(fills(early).isEmpty, "the new place comes first")
        // It lands and ends; then the gap is filled, without the bytes it
        // brought: each fill that ends plans the next.
        let first = fills(jump.flatMap { bench.land($0) })
        #expect(first == [kept.upper..<seek], "\(first)")
        let second = fills(first.flatMap { bench.land($0) })
        #expect(second == [jump.last!.upperBound..<episode], "\(second)")
        #expect(fills(second.flatMap { bench.land($0) }).isEmpty)
        // Every byte of the episode once, none twice.
        var all = RangeSet()
        var total: Int64 = 0
        for range in [0..<kept.upper] + jump + first + second {
            #expect(!all.contains(range.lowerBound), "\(range) twice")
            all.insert(range)
            total += Int64(range.count)
        }
        #expect(all.ranges == [0..<episode] && total == episode)
    }

    /// The fill of a gap a jump left is planned by the rules like any
    /// fetch (`guardingVariants`): for a version no strong ETag vouches
    /// for, it starts a little before the cached bytes it continues, to
    /// compare them (issue 39: this path once skipped the check).
    @Test func theFillAfterAJumpChecksContinuityLikeARead() {
        var (bench, stream) = streaming(etag: nil, lastModified: ReadBench.lastModified)
        let jump = ReadBench.fetched(bench.read(at: 20 * mib, size: 64 * 1024))
        let kept = bench.state.fetches[stream]!
        bench.arrive(stream, count: 512 * 1024)
        bench.write(stream, kept.cursor..<kept.upper)
        let aborted = FetchError(isTransient: true, isUnreachable: false, message: "aborted")
        _ = bench.state.fetchEnded(id: stream, error: aborted, attempt: 1, tuning: bench.tuning)
        _ = bench.state.fetchSettled(id: stream, failure: nil, isBackground: false, minimumFetch: 256 * kib)
        let first = fills(jump.flatMap { bench.land($0) })
        #expect(first == [kept.upper - Episode.State.overlapBytes..<20 * mib], "\(first)")
    }

    @Test func aFetchThatYieldedBeforeItsHeadStaysEmpty() {
        var (bench, stream) = streaming(arrived: 0)
        _ = bench.read(at: 20 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == 2 * mib)
        let verdict = bench.head(stream, 2 * mib..<episode)
        #expect(verdict.verdict == .accepted)
        #expect(bench.state.fetches[stream]?.upper == 2 * mib, "the head does not undo the cut")
    }

    private func rechecks(_ effects: [Episode.State.Effect]) -> [Double] {
        effects.compactMap { effect in
            if case .recheck(let delay) = effect { return delay }
            return nil
        }
    }

    private func fills(_ effects: [Episode.State.Effect]) -> [Range<Int64>] {
        effects.compactMap { effect in
            if case .fetch(_, let range) = effect { return range }
            return nil
        }
    }
}
