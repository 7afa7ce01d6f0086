import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The first responses of an episode (docs/DESIGN.md, "Episodes and their
/// variants", "Until two responses agree"): until a second response showed
/// the origin serves the same bytes to each request, the read-ahead sends
/// one request without its head at a time and opens wait for that proof;
/// the response that shows a stitching host costs no more than itself.
@Suite struct FirstResponsesTests {
    private let mib = ReadBench.mib
    private let tuning = EpisodeReader.Tuning()

    /// 256 KiB cached from the open's probe, confirmed by it (`etag` or
    /// `lastModified`), not agreed by a second response yet; file 1 open on it.
    private func afterTheProbe(etag: String? = "\"v1\"", lastModified: String? = nil) -> ReadBench {
        ReadBench(length: 10 * mib, etag: etag, lastModified: lastModified, present: [0..<256 * 1024], agreed: false)
    }

    private func head(
        _ status: Int, first: Int64, last: Int64?, total: Int64, etag: String?
    ) -> FetchHead {
        FetchHead(
            status: status, rangeFirst: status == 206 ? first : nil, rangeLast: last, total: status == 206 ? total : nil,
            contentLength: status == 200 ? total : nil, etag: etag, lastModified: nil, effectiveURL: "http://o/a.mp3")
    }

    private func apply(
        _ state: inout Episode.State, _ head: FetchHead, id: UInt64
    ) -> (Episode.State.HeadVerdict, [Episode.State.Effect], [Episode.State.Effect]) {
        guard case .body(let start, let last, let total) = Episode.State.reading(head) else { return (.stale, [], []) }
        let context = Episode.State.HeadContext(now: 1000, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let (verdict, transition) = state.head(id: id, head, start: start, last: last, total: total, context: context)
        return (verdict, transition.durable, transition.then)
    }

    /// Nothing cached, file 1 opened while its probe asks, and the probe's
    /// head told the version; no byte of it has come. Returns the probe.
    private func probeAnswered() throws -> (ReadBench, Episode.State.ProbeStart) {
        var bench = ReadBench(length: 10 * mib, handles: [], confirmed: false)
        let probe = try #require(ReadBench.probes(bench.open(1, feedLength: 10 * mib)).first)
        #expect(bench.state.isProvisional(1))
        bench.head(probe.id, probe.range)
        #expect(bench.state.handles[1] != nil && !bench.state.isProvisional(1) && !bench.state.current.hadBytes)
        return (bench, probe)
    }

    /// Fetch `id`'s head shows version 2 (under the index lock): how many
    /// reads it fails, and the reads it makes again on the new version.
    private func newVersion(_ bench: inout ReadBench, at id: UInt64) -> (failed: Int, again: [Episode.EarlyRead]) {
        guard let progress = bench.state.fetches[id] else {
            Issue.record("fetch \(id) is on its way")
            return (0, [])
        }
        let then = bench.head(id, progress.cursor..<progress.upper, etag: "\"v2\"").transition.then
        #expect(bench.state.generation == 1)
        let again = then.flatMap { effect -> [Episode.EarlyRead] in
            if case .resume(let reads, _) = effect { return reads }
            return []
        }
        return (ReadBench.failed(then), again)
    }

    /// A player reads on from byte 0, `steps` reads of 64 KiB, through the
    /// read event's continuity check.
    private func readAhead(_ bench: inout ReadBench, steps: Int = 4) -> [Range<Int64>] {
        var fetched: [Range<Int64>] = []
        for step in 0..<steps {
            fetched += ReadBench.fetched(bench.read(at: Int64(step) * 65536, size: 65536))
        }
        return fetched
    }

    // MARK: - One request without its head at a time

    @Test func untilTwoResponsesAgreeTheReadAheadWaitsForTheLastHead() throws {
        var bench = afterTheProbe()
        let first = readAhead(&bench)
        #expect(first.count == 1, "one window, not two at once: \(first)")
        let id = try #require(bench.state.fetches.keys.max())
        #expect(bench.state.fetches[id]?.headArrived == false)
        // Its head agrees (the same strong ETag): the next window may go.
        let range = try #require(first.first)
        let (verdict, _, _) = apply(
            &bench.state, head(206, first: range.lowerBound, last: range.upperBound - 1, total: 10 * mib, etag: "\"v1\""),
            id: id)
        #expect(verdict == .accepted && bench.state.current.agreed)
        bench.land(range)
        let next = ReadBench.fetched(bench.read(at: 4 * 65536, size: 65536))
        #expect(!next.isEmpty, "read-ahead goes on once the version is agreed")
    }

    /// The probe's head came, its bytes are still coming: a next head
    /// could show a host that stitches and drop them under the file
    /// reading them. The read-ahead waits, a read on past the probe waits
    /// without a request of its own, and both go when the probe ends,
    /// the read finding its bytes on their way.
    @Test func untilTwoResponsesAgreeNoRequestGoesWhileTheFirstStillBringsBytes() throws {
        // A first mount: nothing told the version before the probe.
        var bench = ReadBench(length: nil, handles: [])
        let probe = try #require(ReadBench.probes(bench.open(1, feedLength: 10 * mib)).first)
        bench.head(probe.id, probe.range, total: 10 * mib)
        #expect(bench.state.handles[1] != nil && !bench.state.current.agreed)
        let early = ReadBench.fetched(bench.read(at: 0, size: 65536))
        #expect(early.isEmpty, "the read-ahead waits for the probe's bytes: \(early)")
        #expect(bench.state.heldReadAhead != nil)
        let past = probe.range.upperBound
        let reply = Episode.ReadToken.fake()
        let parked = bench.read(at: past, size: 65536, reply: reply)
        #expect(ReadBench.fetched(parked).isEmpty && ReadBench.failed(parked) == 0, "\(parked)")
        #expect(!bench.state.waiters.contains { $0.range.lowerBound == past }, "made again later, not a waiter")
        // The probe's bytes land and it ends: the held window goes out,
        // and the read is made again after it.
        let ended = bench.land(probe.range)
        let sent = ReadBench.fetched(ended)
        #expect(sent.first?.lowerBound == past, "the held read-ahead: \(sent)")
        let again = ended.flatMap { effect -> [Episode.EarlyRead] in
            if case .resume(let reads, _) = effect { return reads }
            return []
        }
        #expect(again.map(\.offset) == [past])
        #expect(bench.state.heldReadAhead == nil)
    }

    /// A held read-ahead goes when the probe ends even if its file closed
    /// meanwhile (its head is the proof the next open waits for), but not
    /// if its file jumped elsewhere.
    @Test func aHeldReadAheadGoesForAClosedFileButNotAJumpedOne() throws {
        for jumps in [false, true] {
            var bench = ReadBench(length: nil, handles: [])
            let probe = try #require(ReadBench.probes(bench.open(1, feedLength: 10 * mib)).first)
            bench.head(probe.id, probe.range, total: 10 * mib)
            #expect(ReadBench.fetched(bench.read(at: 0, size: 65536)).isEmpty)
            if jumps {
                // A jump: it sends its own request (a jump is not held).
                #expect(ReadBench.fetched(bench.read(at: 8 * mib, size: 4096)).count == 1)
            } else {
                _ = bench.state.release(handle: 1, now: bench.now)
            }
            let sent = ReadBench.fetched(bench.land(probe.range))
            #expect(sent.isEmpty == jumps, "jumps: \(jumps), sent: \(sent)")
            #expect(bench.state.heldReadAhead == nil)
        }
    }

    /// A file opened while the read-ahead is held waits for that
    /// request's head as it waits for any proof on its way: opened at once
    /// on the first variant, its first read past the probe would show the
    /// stitching host and fail it.
    @Test func anOpenWhileTheReadAheadIsHeldWaitsForItsHead() throws {
        var bench = ReadBench(length: nil, handles: [])
        let probe = try #require(ReadBench.probes(bench.open(1, feedLength: 10 * mib)).first)
        bench.head(probe.id, probe.range, total: 10 * mib)
        _ = bench.read(at: 0, size: 65536)
        #expect(bench.open(2).isEmpty && bench.state.handles[2] == nil, "it waits")
        let sent = ReadBench.fetched(bench.land(probe.range))
        let ahead = try #require(bench.state.fetches.first { $0.value.cursor == probe.range.upperBound })
        #expect(sent == [ahead.value.cursor..<ahead.value.upper])
        #expect(bench.state.handles[2] == nil, "still waiting, for the held request's head")
        // That head shows a host that stitches: a whole new variant.
        let (_, _, then) = apply(
            &bench.state, head(200, first: 0, last: nil, total: 10 * mib + 4096, etag: "\"v2\""), id: ahead.key)
        #expect(bench.state.unstable != nil)
        let opened = then.compactMap { effect -> Episode.OpenAnswer? in
            if case .answerOpen(_, let answer?) = effect { return answer }
            return nil
        }
        #expect(opened.map(\.handle) == [2] && bench.state.handles[2]?.generation == bench.state.generation)
    }

    @Test func anAgreedVersionSendsWindowsAsBefore() {
        // The index kept the version, and the mount's check confirmed it.
        var agreed = ReadBench(length: 10 * mib, present: [0..<256 * 1024])
        var unproven = afterTheProbe()
        // The reader comes near the end of the first window before its
        // head: only an agreed version sends the next.
        #expect(readAhead(&agreed, steps: 18).count >= 2)
        #expect(readAhead(&unproven, steps: 18).count == 1)
    }

    // MARK: - Opens wait for the proof

    @Test func anOpenWaitsForTheHeadThatShowsWhetherTheOriginStitches() throws {
        var bench = afterTheProbe()
        _ = readAhead(&bench)
        let id = try #require(bench.state.fetches.keys.max())
        let range = try #require(bench.state.fetches[id]).cursor..<bench.state.fetches[id]!.upper
        let reply = Episode.OpenToken.fake()
        #expect(bench.state.open(handle: 2, reply: reply, now: bench.now, feedLength: nil, tuning: tuning).isEmpty)
        #expect(bench.state.handles[2] == nil)
        let (_, _, then) = apply(
            &bench.state, head(206, first: range.lowerBound, last: range.upperBound - 1, total: 10 * mib, etag: "\"v1\""),
            id: id)
        let opened = then.flatMap { effect -> [(Episode.OpenToken, Episode.OpenAnswer)] in
            if case .answerOpen(let token, let answer?) = effect { return [(token, answer)] }
            return []
        }
        #expect(opened.count == 1 && opened.first?.1.handle == 2)
        #expect(bench.state.handles[2]?.generation == bench.state.generation)
    }

    /// A weak ETag proves nothing of the bytes (RFC 9110, 8.8.1): the
    /// response to the read-ahead, under the same weak ETag, is not joined
    /// to the cached part on an overlap check (a host that stitches ads of
    /// one length changes only the ads). Its bytes are not used, the
    /// episode is marked as one with no validator, and the next read
    /// streams it whole from byte 0, with no `If-Range` (a weak ETag may
    /// not go there, nor a date beside it).
    @Test func aWeakETagProvesNothingAndTheEpisodeIsStreamedWholeFromByteZero() throws {
        // The first response already comes under the weak ETag: nothing of
        // it is cached, so no later response would be spliced to it.
        var bench = ReadBench(length: 10 * mib, etag: "W/\"v1\"", handles: [], confirmed: false)
        let probe = try #require(ReadBench.probes(bench.open(1, feedLength: 10 * mib)).first)
        _ = bench.read(at: 0, size: 65536)
        let (verdict, transition) = bench.head(probe.id, probe.range)
        let (durable, then) = (transition.durable, transition.then)
        #expect(verdict == .accepted && durable.isEmpty)
        #expect(then.contains { if case .markUnstable(Episode.State.noValidator) = $0 { true } else { false } })
        #expect(then.contains { if case .endAfterHead = $0 { true } else { false } }, "its body is not used")
        #expect(!bench.state.current.agreed)
        #expect(bench.state.fetches[probe.id] == nil)
        let stream = ReadBench.probes(then).map(\.range)
        #expect(stream == [0..<EpisodeRecord.positions.upperBound], "one stream from byte 0: \(stream)")
        #expect(bench.state.version.ifRange == nil)
    }

    @Test func anOverlapThatDidNotMatchOpensTheWaitingFileOnWhatComesNext() throws {
        // No strong ETag: the read-ahead overlaps the probe's bytes to compare.
        var bench = afterTheProbe(etag: nil, lastModified: ReadBench.lastModified)
        _ = readAhead(&bench)
        let id = try #require(bench.state.fetches.keys.max())
        _ = bench.state.open(handle: 2, reply: Episode.OpenToken.fake(), now: bench.now, feedLength: nil, tuning: tuning)
        let broken = bench.state.continuityBroken(id: id)
        let outcome = try #require(broken)
        let opened = outcome.then.flatMap { effect -> [(Episode.OpenToken, Episode.OpenAnswer)] in
            if case .answerOpen(let token, let answer?) = effect { return [(token, answer)] }
            return []
        }
        #expect(opened.count == 1 && bench.state.handles[2]?.generation == bench.state.generation)
        #expect(bench.state.generation == 1)
    }

    @Test func anOpenWhoseProofNeverCameOpensWhenTheFetchEnds() throws {
        var bench = afterTheProbe()
        _ = readAhead(&bench)
        let id = try #require(bench.state.fetches.keys.max())
        _ = bench.state.open(handle: 2, reply: Episode.OpenToken.fake(), now: bench.now, feedLength: nil, tuning: tuning)
        // Its request fails before a head came.
        let effects = bench.end(id, error: FetchError(isTransient: false, isUnreachable: false, message: "HTTP 500"))
        let answered = effects.filter { if case .answerOpen(_, let options) = $0 { options != nil } else { false } }
        #expect(answered.count == 1 && bench.state.openWaiters.isEmpty)
    }

    // MARK: - The response that shows a stitching host

    @Test func aWholeBodyOfAnotherVariantBecomesTheStream() throws {
        var bench = afterTheProbe()
        _ = readAhead(&bench)
        let id = try #require(bench.state.fetches.keys.max())
        // An unrelated fetch planned before the head (a scan's fetch
        // ahead): it would bring a third variant.
        let scan = ReadBench.fetched(bench.state.fill(handle: 1, within: [8 * mib..<9 * mib], tuning: tuning))
        #expect(scan == [8 * mib..<9 * mib])
        let other = try #require(bench.state.fetches.keys.max())
        // If-Range with the old ETag: the host answers the whole new variant.
        let (verdict, _, then) = apply(&bench.state, head(200, first: 0, last: nil, total: 10 * mib + 4096, etag: "\"v2\""), id: id)
        #expect(verdict == .accepted && bench.state.unstable != nil)
        #expect(bench.state.streamID == id, "the whole body is the episode's one variant")
        #expect(bench.state.fetches[other] == nil)
        #expect(!then.contains { if case .endAfterHead = $0 { true } else { false } })
        #expect(bench.state.fetches[id]?.upper == 10 * mib + 4096)
    }

    @Test func aRangeOfAnotherVariantStopsAtItsHead() throws {
        var bench = afterTheProbe()
        let fetched = readAhead(&bench)
        let id = try #require(bench.state.fetches.keys.max())
        let range = try #require(fetched.first)
        let (_, _, then) = apply(
            &bench.state, head(206, first: range.lowerBound, last: range.upperBound - 1, total: 10 * mib + 4096, etag: "\"v2\""),
            id: id)
        #expect(bench.state.unstable != nil)
        #expect(then.contains { if case .endAfterHead = $0 { true } else { false } }, "no stream continues its bytes")
        #expect(bench.state.fetches[id]?.upper == range.lowerBound)
        #expect(bench.state.streamID == nil)
    }

    @Test func filesOfAVersionThatNeverHadAByteReadTheNextOne() throws {
        var (bench, _) = try probeAnswered()
        _ = bench.read(at: 2 * mib)
        let id = try #require(bench.state.fetches.keys.max())
        let reply = Episode.ReadToken.fake()
        _ = bench.read(at: 3 * mib, reply: reply)
        let dropped = newVersion(&bench, at: id)
        #expect(dropped.failed == 0, "nothing of the old version could have been read")
        #expect(dropped.again.count == 2, "both reads are made again on the new version")
        #expect(bench.state.handles[1]?.generation == bench.state.generation)
    }

    @Test func bytesAnsweredOnArrivalCountAsHadBeforeTheyAreWritten() throws {
        // The open's probe answers its reader from memory; the writer has
        // not marked the bytes yet when another head drops the version.
        let answered = try probeAnswered()
        var bench = answered.0
        let probe = answered.1
        // File 1 reads the probe's first bytes and waits for them.
        _ = bench.read(1, at: 0, size: 4096)
        let arrived = bench.state.bodyArrived(id: probe.id, count: 65536, now: bench.now)
        let arrival = try #require(arrived)
        #expect(arrival.early.count == 1, "answered from memory")
        _ = bench.read(at: 2 * mib)
        let id = try #require(bench.state.fetches.keys.max())
        #expect(id != probe.id)
        let dropped = newVersion(&bench, at: id)
        #expect(dropped.again.isEmpty, "the file read bytes of the old version: it is not moved to the new one")
        #expect(bench.state.handles[1]?.generation == 0)
    }

    @Test func anOpenThatMustAskAgainSendsItsOwnProbeThoughOthersWaitForProof() throws {
        var bench = afterTheProbe()
        _ = readAhead(&bench)
        _ = bench.state.open(handle: 2, reply: Episode.OpenToken.fake(), now: bench.now, feedLength: nil, tuning: tuning)
        #expect(bench.state.openWaiters.count == 1, "waits for the proof")
        // Long after: the version must be confirmed again, by a probe.
        let later = bench.now + tuning.revalidateAfter + 1
        let effects = bench.state.open(handle: 3, reply: Episode.OpenToken.fake(), now: later, feedLength: nil, tuning: tuning)
        #expect(effects.contains { if case .probe = $0 { true } else { false } }, "\(effects)")
    }

    @Test func filesOfAVersionThatHadBytesKeepThem() throws {
        var bench = afterTheProbe()
        _ = bench.read(at: 2 * mib)
        let id = try #require(bench.state.fetches.keys.max())
        let dropped = newVersion(&bench, at: id)
        #expect(dropped.again.isEmpty && dropped.failed == 1)
        #expect(bench.state.handles[1]?.generation == 0)
    }
}
