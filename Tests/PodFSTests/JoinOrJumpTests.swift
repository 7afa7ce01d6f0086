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

    /// A link 50 ms away each way, 2 MB/s.
    private var homeLine: LinkEstimate {
        var link = LinkEstimate()
        link.observe(latency: 0.1)
        link.observe(bytes: 2_000_000, in: 1)
        return link
    }

    /// A player that read the first 2 MiB of a cold episode while one fetch
    /// streams the rest (as after the open's probe); the stream has brought
    /// 2 MiB.
    private func streaming(
        handles: [UInt64] = [1], etag: String? = "\"v1\"", lastModified: String? = nil
    ) -> (ReadBench, UInt64) {
        var bench = ReadBench(
            length: episode, etag: etag, lastModified: lastModified, present: [0..<2 * mib], handles: handles)
        bench.link = homeLine
        bench.state.handles[1] = Episode.HandleState(generation: 0, nextOffset: 2 * mib, streak: 5)
        let id = bench.state.takeFetchID()
        var stream = Episode.FetchProgress(cursor: 2 * mib, upper: episode, generation: 0)
        stream.received = 2 * mib + 64 * kib
        bench.state.fetches[id] = stream
        return (bench, id)
    }

    // MARK: - The rule

    @Test func aSeekFarAheadOfTheStreamJumps() {
        // 20 minutes ahead at 2 MB/s: 9.6 s by the stream, 0.13 s alone.
        let joins = JoinOrJump.joins(
            position: 19_200_000, received: 262_144, need: 64 * kib, following: false, rate: 2_000_000,
            roundTrip: 0.1)
        #expect(!joins)
    }

    @Test func aReadJustAheadOfTheStreamJoins() {
        // 100 KB at 2 MB/s is 50 ms: sooner than a round trip.
        #expect(
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 64 * kib, following: false, rate: 2_000_000,
                roundTrip: 0.1))
        // Bytes that already arrived are joined whatever the link.
        #expect(
            JoinOrJump.joins(position: 5, received: 10, need: 1, following: false, rate: 1, roundTrip: 100))
    }

    @Test func theArrivalTimesDecideAtTheirMeetingPoint() {
        // Round trip 0.1 s + the gain a jump must bring (0.1 s) at 2 MB/s,
        // + 64 KiB: the stream ties at 465,536 B.
        let tie: Int64 = 400_000 + 65_536
        let at = { (distance: Int64) in
            JoinOrJump.joins(
                position: distance, received: 0, need: 65_536, following: false, rate: 2_000_000, roundTrip: 0.1)
        }
        #expect(at(tie))
        #expect(!at(tie + 1))
    }

    @Test func aJumpThatWouldSaveMillisecondsDoesNotCutAFastStream() {
        // Seen on loopback with eight readers sharing the page cache: a
        // read 1.5 MiB ahead of a 172 MB/s stream silent for 3 ms. Its own
        // request would bring it about 4 ms sooner; cutting the stream
        // cost what it had in flight.
        let read = { (silence: Double) in
            JoinOrJump.joins(
                position: 3_407_872, received: 1_835_008, need: 1 * self.mib, following: false, rate: 172_250_168,
                roundTrip: 0.0023, silence: silence)
        }
        #expect(read(0.003))
        // A stream held back for longer than the gain is still left.
        #expect(!read(0.12))
        // So is one far enough ahead: 100 ms of the link and more.
        #expect(
            !JoinOrJump.joins(
                position: 40 * mib, received: 1_835_008, need: 1 * mib, following: false, rate: 172_250_168,
                roundTrip: 0.0023, silence: 0))
    }

    @Test func aReaderThatReadsOnStaysWithItsStream() {
        // The kernel's read-ahead runs a little ahead of the bytes: a read
        // that follows on never cuts its own stream.
        #expect(
            JoinOrJump.joins(
                position: 1 * mib + 1, received: 0, need: 128 * kib, following: true, rate: 100_000_000,
                roundTrip: 0.0005))
        #expect(
            JoinOrJump.joins(
                position: 10 * mib, received: 0, need: 128 * kib, following: true, rate: 2_000_000, roundTrip: 0.1))
    }

    @Test func anUnmeasuredLinkJoinsOnlyNearby() {
        let at = { (position: Int64) in
            JoinOrJump.joins(position: position, received: 0, need: 1, following: false, rate: nil, roundTrip: 0.1)
        }
        #expect(at(ReadPlan.nearby))
        #expect(!at(ReadPlan.nearby + 1))
    }

    @Test func aStreamSilentLongerThanARoundTripLosesEvenJustAhead() {
        // 100 KB ahead of a 2 MB/s stream: joined while it flows, but not
        // once it brought nothing for longer than a round trip and the
        // gain a jump must bring.
        let at = { (silence: Double) in
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 64 * 1024, following: false, rate: 2_000_000,
                roundTrip: 0.1, silence: silence)
        }
        #expect(at(0))
        #expect(at(0.01))
        #expect(!at(0.2))
        // A reader that reads on stays, silence or not (a stalled
        // connection is the transfer's timeout's to end).
        #expect(
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 1, following: true, rate: 2_000_000, roundTrip: 0.1,
                silence: 30))
    }

    @Test func anUnmeasuredLinkJoinsOnlyAFetchThatIsNotSilent() {
        let at = { (silence: Double) in
            JoinOrJump.joins(position: 100, received: 0, need: 1, following: false, rate: nil, roundTrip: nil, silence: silence)
        }
        #expect(at(JoinOrJump.quietSilence))
        #expect(!at(JoinOrJump.quietSilence + 0.01))
    }

    @Test func theRecheckComesAfterTwiceARequestOfItsOwnWithinBounds() {
        // 0.1 s + 64 KiB at 2 MB/s = 0.133 s: judged again at 0.266 s.
        let delay = JoinOrJump.recheckDelay(need: 65_536, rate: 2_000_000, roundTrip: 0.1)
        #expect(abs(delay - 2 * (0.1 + 65_536.0 / 2_000_000)) < 1e-9)
        #expect(JoinOrJump.recheckDelay(need: 1, rate: 1e9, roundTrip: 0.0001) == 0.1)
        #expect(JoinOrJump.recheckDelay(need: 64 * 1024 * 1024, rate: 1000, roundTrip: 5) == 1)
        #expect(JoinOrJump.recheckDelay(need: 1, rate: nil, roundTrip: nil) == JoinOrJump.quietSilence)
    }

    // MARK: - The state machine: a stream that stalls is judged again

    /// Listener 2 opens and reads just ahead of the flowing stream: it
    /// joins. Returns the bench, the stream and the read's bytes.
    private func joinedJustAhead() -> (ReadBench, UInt64, Range<Int64>) {
        var (bench, stream) = streaming(handles: [1, 2])
        bench.state.fetches[stream]?.firstArrival = (bench.now - 1, 0)
        bench.state.fetches[stream]?.lastArrival = bench.now
        let position = 2 * mib + 64 * kib + 100_000
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
        bench.now += 0.05
        // Bytes keep coming, just not these yet.
        _ = bench.state.bodyArrived(id: stream, count: 16 * 1024, now: bench.now - 0.001)
        let effects = bench.recheck()
        #expect(ReadBench.fetched(effects).isEmpty && bench.state.deferred.isEmpty, "\(effects)")
        #expect(rechecks(effects).count == 1, "still waiting on the stream: judged again later")
    }

    @Test func aReadWaitingForAHeadThatNeverComesGetsAFetchOfItsOwn() {
        // The stream's request is held before its head: no byte ever came.
        var (bench, stream) = streaming(handles: [1, 2])
        bench.state.fetches[stream]?.received = 2 * mib
        // Listener 1 stopped: nobody else needs the stream.
        bench.state.handles[1]?.streak = 0
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
        let fetched = ReadBench.fetched(bench.read(at: 12 * mib, size: 64 * 1024))
        #expect(bench.state.handles[1]!.streak > 5, "the streak goes on")
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
        // Listener 1 stopped; listener 2 opens and seeks.
        bench.state.handles[1]?.streak = 0
        bench.link = LinkEstimate()
        bench.link.observe(latency: 0.01)
        bench.link.observe(bytes: 1_000_000_000, in: 1)
        bench.state.fetches[stream]?.firstArrival = (bench.now - 1, 2 * mib)
        bench.state.fetches[stream]?.received = 3 * mib
        let fast = bench
        _ = bench.read(2, at: 10 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == 3 * mib, "a stream held back yields")
        // The same stream flowing at the link's rate is joined.
        var flowing = fast
        flowing.state.fetches[stream]?.firstArrival = (flowing.now - 0.001, 2 * mib)
        #expect(ReadBench.fetched(flowing.read(2, at: 10 * mib, size: 64 * 1024)).isEmpty)
    }

    @Test func anotherListenerInsideTheStreamKeepsItsWindow() {
        var (bench, stream) = streaming(handles: [1, 2])
        // Listener 2 plays at 2 MiB too; listener 1 jumps.
        bench.state.handles[2] = Episode.HandleState(generation: 0, nextOffset: 2 * mib, streak: 3)
        _ = bench.read(1, at: 30 * mib, size: 64 * 1024)
        let window = ReadPlan.window(streak: 3, link: bench.link, tuning: bench.tuning)
        #expect(bench.state.fetches[stream]?.upper == 2 * mib + window)
        #expect(bench.state.deferred.ranges.first?.lowerBound == 2 * mib + window)
    }

    @Test func aWaitingReaderKeepsTheBytesItWaitsFor() {
        var (bench, stream) = streaming(handles: [1, 2])
        let waiting = 2 * mib + 100 * kib..<2 * mib + 228 * kib
        bench.state.waiters.append(Episode.Waiter(range: waiting, reply: Episode.ReadToken.fake(), generation: 0))
        _ = bench.read(1, at: 40 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == waiting.upperBound)
    }

    @Test func aReaderWaitingPastTheJumpStillGetsEveryByte() {
        // A read waits for 1 MiB the stream would bring; reader 2 jumps
        // into the middle of it. The stream is cut at the jump, the jump's
        // own fetch covers only its window: the rest of the waiting read's
        // bytes must still be on their way (a stress run failed such a read).
        var (bench, stream) = streaming(handles: [1, 2])
        let waiting = 20 * mib..<21 * mib
        bench.state.waiters.append(Episode.Waiter(range: waiting, reply: Episode.ReadToken.fake(), generation: 0))
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
        bench.link = homeLine
        _ = bench.read(at: 10 * mib, size: 4096)
        let probe = bench.state.fetches.first!
        #expect(probe.value.answersOnArrival)
        _ = bench.read(at: 10 * mib + 200 * kib, size: 4096)
        #expect(bench.state.fetches[probe.key]?.upper == probe.value.upper && bench.state.deferred.isEmpty)
    }

    @Test func aSeekBackWithinTheStreaksReachReadsOnFromTheNewPlace() {
        // A player 20 MiB in seeks back 10 MiB, within its 16 MiB window's
        // reach: the seek is a jump, but the next read there reads on, and
        // its read-ahead goes out (before, the reader stayed at its old
        // place, so every read after the seek was a jump of its own with
        // no read-ahead: a round trip per kernel read).
        var bench = ReadBench(length: episode, present: [0..<mib, 18 * mib..<20 * mib])
        bench.link = homeLine
        bench.state.handles[1] = Episode.HandleState(generation: 0, nextOffset: 20 * mib, streak: 8)
        let seek = ReadBench.fetched(bench.read(at: 10 * mib, size: 128 * 1024))
        #expect(seek.count == 1 && seek.first?.lowerBound == 10 * mib, "the seek's own fetch: \(seek)")
        #expect(bench.state.handles[1]!.rewound == 10 * mib + 128 * kib)
        let next = ReadBench.fetched(bench.read(at: 10 * mib + 128 * kib, size: 128 * 1024))
        // The read-ahead: from the seek's fetch to the bytes cached at 18 MiB.
        #expect(next == [seek[0].upperBound..<18 * mib], "the reader reads on with its window: \(next)")
    }

    @Test func aReadTheKernelSentLateDoesNotMoveTheReaderBack() {
        // Under load the kernel's read-ahead reads arrive out of order, one
        // more than `nearby` behind: the reader stays where it was, its
        // next read in order reads on, and its stream is not cut.
        var (bench, window) = playingAt12MiB()
        _ = bench.state.current.wrote(8 * mib..<10 * mib)
        let late = bench.read(at: 9 * mib, size: 128 * 1024)
        #expect(ReadBench.served(late) == [9 * mib..<9 * mib + 128 * kib])
        #expect(bench.state.handles[1]!.nextOffset == 12 * mib && bench.state.handles[1]!.rewound != nil)
        let next = bench.read(at: 12 * mib, size: 128 * 1024)
        #expect(ReadBench.fetched(next).isEmpty)
        #expect(bench.state.fetches[window]?.upper == 28 * mib, "its own stream goes on")
        #expect(bench.state.handles[1]!.rewound == nil && bench.state.handles[1]!.streak >= 8)
    }

    // MARK: - The read-ahead left behind yields

    /// A player at 12 MiB with its 16 MiB window on its way (half a MiB
    /// in), the first 1 MiB and 10-12 MiB cached.
    private func playingAt12MiB(handles: [UInt64] = [1]) -> (ReadBench, UInt64) {
        var bench = ReadBench(length: episode, present: [0..<mib, 10 * mib..<12 * mib], handles: handles)
        bench.link = homeLine
        bench.state.handles[1] = Episode.HandleState(generation: 0, nextOffset: 12 * mib, streak: 6)
        let id = bench.state.takeFetchID()
        var window = Episode.FetchProgress(cursor: 12 * mib, upper: 28 * mib, generation: 0)
        window.received = 12 * mib + 512 * kib
        bench.state.fetches[id] = window
        return (bench, id)
    }

    @Test func aSeekBackLetsTheWindowLeftBehindYieldOnceItReadsOnThere() {
        var (bench, window) = playingAt12MiB()
        let effects = bench.read(at: 5 * mib, size: 64 * 1024)
        #expect(ReadBench.fetched(effects).first?.lowerBound == 5 * mib, "\(effects)")
        // One read behind could be a read the kernel sent late: nothing yet.
        #expect(bench.state.fetches[window]?.upper == 28 * mib)
        // The next reads on there: the window ends where it has come, the
        // rest is filled later.
        _ = bench.read(at: 5 * mib + 64 * kib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
        #expect(bench.state.deferred.ranges == [12 * mib + 512 * kib..<28 * mib])
    }

    @Test func aJumpBeyondTheWindowsReachLetsItYieldAtOnce() {
        var (bench, window) = playingAt12MiB()
        _ = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
    }

    @Test func aSeekIntoTheCacheLetsItYieldToo() {
        var (bench, window) = playingAt12MiB()
        #expect(ReadBench.served(bench.read(at: 0, size: 64 * 1024)) == [0..<64 * kib])
        #expect(ReadBench.served(bench.read(at: 64 * kib, size: 64 * 1024)) == [64 * kib..<128 * kib])
        #expect(bench.state.fetches[window]?.upper == 12 * mib + 512 * kib)
    }

    @Test func aWindowNobodyGotAByteOfIsStoppedAtOnce() {
        var (bench, window) = playingAt12MiB()
        bench.state.fetches[window]?.received = 12 * mib
        let jump = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(jump.contains { if case .stop(window) = $0 { true } else { false } }, "\(jump)")
        #expect(bench.state.fetches[window]?.upper == 12 * mib)
    }

    @Test func theWindowKeepsWhatOthersNeed() {
        // Another file is open (its reads may skip what the kernel's page
        // cache holds, so a move cannot be told): nothing is cut. A read of
        // the kernel's waiting on the window keeps its bytes coming.
        var (bench, window) = playingAt12MiB(handles: [1, 2])
        bench.state.handles[2] = Episode.HandleState(generation: 0, nextOffset: 12 * mib, streak: 3)
        _ = bench.read(at: 50 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib)
        var (alone, stream) = playingAt12MiB()
        let waiting = 13 * mib..<13 * mib + 128 * kib
        alone.state.waiters.append(Episode.Waiter(range: waiting, reply: Episode.ReadToken.fake(), generation: 0))
        _ = alone.read(at: 50 * mib, size: 64 * 1024)
        #expect(alone.state.fetches[stream]?.upper == waiting.upperBound)
    }

    @Test func aReaderThatReadsOnOrAFreshOpenCutsNothing() {
        var (bench, window) = playingAt12MiB(handles: [1, 2])
        _ = bench.read(at: 12 * mib, size: 128 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib, "reading on")
        // A second file opened in the cache: not the player's skip.
        _ = bench.read(2, at: 0, size: 64 * 1024)
        _ = bench.read(2, at: 5 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[window]?.upper == 28 * mib, "another file's jump keeps this reader's window")
    }

    // MARK: - One window on the link at a time

    @Test func theNextWindowWaitsUntilTheCurrentOneHasAlmostArrived() {
        // A player far into its streak, one 16 MiB window on its way with
        // most of it still to come: a second window would halve its rate.
        var bench = ReadBench(length: episode, present: [0..<5 * mib])
        bench.link = homeLine
        bench.state.handles[1] = Episode.HandleState(generation: 0, nextOffset: 5 * mib, streak: 8)
        let id = bench.state.takeFetchID()
        var window = Episode.FetchProgress(cursor: 5 * mib, upper: 21 * mib, generation: 0)
        window.received = 6 * mib
        bench.state.fetches[id] = window
        // Less than a window ahead of the reader: the old rule sent the next.
        #expect(ReadBench.fetched(bench.read(at: 5 * mib + 512 * kib)).isEmpty, "one window on the link")
        // Its last bytes are arriving: the next one goes out now, its
        // round trip paid while they come.
        let overlap = ReadPlan.readAheadOverlap(link: bench.link, tuning: bench.tuning)
        bench.state.fetches[id]?.received = 21 * mib - overlap
        let next = ReadBench.fetched(bench.read(at: 5 * mib + 640 * kib))
        #expect(next.first?.lowerBound == 21 * mib && next.count == 1, "\(next)")
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
        _ = bench.state.current.wrote(kept.cursor..<kept.upper)
        bench.state.fetches[stream]?.cursor = kept.upper
        let aborted = FetchError(isTransient: true, isUnreachable: false, message: "aborted")
        let (end, failure) = bench.state.fetchEnded(id: stream, error: aborted, attempt: 1, tuning: bench.tuning)
        guard case .ended = end else {
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
        _ = bench.state.bodyArrived(id: stream, count: 512 * 1024)
        _ = bench.state.current.wrote(kept.cursor..<kept.upper)
        bench.state.fetches[stream]?.cursor = kept.upper
        let aborted = FetchError(isTransient: true, isUnreachable: false, message: "aborted")
        _ = bench.state.fetchEnded(id: stream, error: aborted, attempt: 1, tuning: bench.tuning)
        _ = bench.state.fetchSettled(id: stream, failure: nil, isBackground: false, minimumFetch: 256 * kib)
        let first = fills(jump.flatMap { bench.land($0) })
        #expect(first == [kept.upper - Episode.State.overlapBytes..<20 * mib], "\(first)")
    }

    @Test func aFetchThatYieldedBeforeItsHeadStaysEmpty() {
        var (bench, stream) = streaming()
        bench.state.fetches[stream]?.received = 2 * mib
        _ = bench.read(at: 20 * mib, size: 64 * 1024)
        #expect(bench.state.fetches[stream]?.upper == 2 * mib)
        let head = FetchHead(
            status: 206, rangeFirst: 2 * mib, rangeLast: episode - 1, total: episode, contentLength: nil,
            etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a")
        let context = Episode.State.HeadContext(now: 1, feedLength: episode, isBackground: false, holdingIndexLock: false)
        let verdict = bench.state.head(
            id: stream, head, start: 2 * mib, last: episode - 1, total: episode, context: context)
        #expect(verdict.0 == .accepted)
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
