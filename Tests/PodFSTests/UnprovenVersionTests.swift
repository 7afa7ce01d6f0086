import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A version that cannot be proven is never spliced (docs/DESIGN.md, "A
/// version that cannot be proven"): an origin that sends no validator is
/// streamed whole from byte 0 from its first response on, and the bytes of
/// a response that is not that stream are never used.
@Suite struct UnprovenVersionTests {
    private let mib = ReadBench.mib
    private let tuning = EpisodeReader.Tuning()
    private let length: Int64 = 6 * 1024 * 1024 + 512 * 1024 + 4321

    private func head(
        _ status: Int = 206, first: Int64 = 0, last: Int64?, total: Int64, etag: String? = nil,
        lastModified: String? = nil
    ) -> FetchHead {
        FetchHead(
            status: status, rangeFirst: status == 206 ? first : nil, rangeLast: last, total: status == 206 ? total : nil,
            contentLength: status == 200 ? total : nil, etag: etag, lastModified: lastModified,
            effectiveURL: "http://o/a.mp3")
    }

    private func apply(
        _ state: inout Episode.State, _ head: FetchHead, id: UInt64, isBackground: Bool = false
    ) -> (Episode.State.HeadVerdict, [Episode.State.Effect], [Episode.State.Effect]) {
        guard case .body(let start, let last, let total) = Episode.State.reading(head) else { return (.stale, [], []) }
        let context = Episode.State.HeadContext(
            now: 1000, feedLength: length, isBackground: isBackground, holdingIndexLock: true)
        let (verdict, transition) = state.head(id: id, head, start: start, last: last, total: total, context: context)
        return (verdict, transition.durable, transition.then)
    }

    private func probes(_ effects: [Episode.State.Effect]) -> [Episode.State.ProbeStart] {
        effects.compactMap { if case .probe(let probe) = $0 { probe } else { nil } }
    }

    private func marks(_ effects: [Episode.State.Effect]) -> [StitchReason] {
        effects.compactMap { if case .markUnstable(let reason) = $0 { reason } else { nil } }
    }

    private func resumed(_ effects: [Episode.State.Effect]) -> [Episode.EarlyRead] {
        effects.flatMap { effect -> [Episode.EarlyRead] in
            if case .resume(let reads, _) = effect { return reads }
            return []
        }
    }

    /// A fresh episode opened (provisionally, nothing cached) and read at
    /// 0; returns the state and the probe's id.
    private func openedAndRead() throws -> (Episode.State, UInt64) {
        var state = Episode.State()
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 1000, feedLength: length, tuning: tuning)
        let probe = try #require(effects.compactMap { if case .probe(let p) = $0 { p } else { nil } }.first)
        #expect(probe.range == 0..<tuning.minimumFetch, "the open's usual probe: whether the origin validates is not known")
        let context = Episode.State.ReadContext(now: 1000, wallClock: 0, link: LinkEstimate(), tuning: tuning)
        _ = state.read(handle: 1, offset: 0, size: 65536, reply: Episode.ReadToken.fake(), context: context)
        #expect(state.earlyReads.count == 1)
        return (state, probe.id)
    }

    @Test func aFirstResponseWithoutAValidatorIsNotUsedAndAStreamFromByteZeroTakesItsPlace() throws {
        var (state, probe) = try openedAndRead()
        let (verdict, durable, then) = apply(&state, head(last: 262_143, total: length), id: probe)
        #expect(verdict == .accepted && durable.isEmpty)
        #expect(marks(then) == [Episode.State.noValidator])
        #expect(then.contains { if case .endAfterHead = $0 { true } else { false } }, "the probe's body is not used")
        let stream = try #require(probes(then).first, "a stream from byte 0 is sent at once")
        #expect(stream.range == 0..<EpisodeRecord.positions.upperBound, "to the end, whatever the length")
        #expect(stream.validator == nil)
        #expect(state.streamID == stream.id && state.probeID == stream.id)
        #expect(state.fetches[probe] == nil)
        // Nothing learnt the probe's length or variant: the file waits on.
        #expect(state.length == nil && state.present.isEmpty)
        #expect(state.isProvisional(1) && state.earlyReads.count == 1)
        #expect(resumed(then).isEmpty)
    }

    @Test func theStreamsHeadTellsTheFileItsVariantsLengthAndAnswersItsReads() throws {
        var (state, probe) = try openedAndRead()
        let (_, _, first) = apply(&state, head(last: 262_143, total: length), id: probe)
        let stream = try #require(probes(first).first)
        // The stream brings another variant, 70 KiB longer.
        let longer = length + 70 * 1024
        let (verdict, _, then) = apply(&state, head(last: longer - 1, total: longer), id: stream.id)
        #expect(verdict == .accepted)
        #expect(state.length == longer, "the stream's variant is the file's")
        #expect(state.handles[1] != nil && !state.isProvisional(1) && state.handles[1]?.generation == state.generation)
        #expect(resumed(then).map(\.offset) == [0], "the read waiting since the open is made again")
        #expect(!then.contains { if case .fail = $0 { true } else { false } }, "no error")
        #expect(state.fetches[stream.id]?.upper == longer, "the stream runs to the end of its own variant")
        #expect(marks(then).isEmpty, "marked once")
    }

    @Test func aWholeFirstResponseWithoutAValidatorIsTheStream() throws {
        var (state, probe) = try openedAndRead()
        // An origin that ignores Range: its 200 is the whole episode.
        let (verdict, _, then) = apply(&state, head(200, last: nil, total: length), id: probe)
        #expect(verdict == .accepted)
        #expect(marks(then).count == 1 && state.unstable != nil)
        #expect(probes(then).isEmpty, "no second request")
        #expect(state.streamID == probe && state.fetches[probe]?.upper == length)
        #expect(state.length == length)
    }

    @Test func anOriginThatSendsLastModifiedOnlyIsNotMarked() throws {
        var (state, probe) = try openedAndRead()
        let (_, _, then) = apply(
            &state, head(last: 262_143, total: length, lastModified: "Tue, 24 Nov 2026 10:00:00 GMT"), id: probe)
        #expect(state.unstable == nil && marks(then).isEmpty && probes(then).isEmpty)
        #expect(state.length == length && state.fetches[probe]?.upper == 262_144)
    }

    @Test func aCompleteEpisodeWithoutAValidatorIsKeptAsItIs() throws {
        // Cached whole from this podfs's one stream (marked when its first
        // response came): no request could bring anything but another variant.
        var state = Episode.State(restoring: EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: length, etag: nil, lastModified: nil,
            ranges: [0..<length], variant: EpisodeVariant(unstable: Episode.State.noValidator.code)))
        #expect(state.startMountCheck() == nil)
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 1000, feedLength: length, tuning: tuning)
        #expect(opened.count == 1 && probes(opened).isEmpty, "every byte of one variant is here")
        #expect(state.present.contains(0..<length) && !state.unprovenBytes)
    }

    @Test func aMountsCheckNobodyWaitsForOnlyMarksTheEpisode() throws {
        // The index knows the length, nothing cached.
        var bench = ReadBench(length: length, etag: nil, handles: [], confirmed: false)
        let started = bench.state.startMountCheck()
        let check = try #require(started)
        let (_, _, then) = apply(&bench.state, head(first: 0, last: 0, total: length), id: check.id, isBackground: true)
        #expect(marks(then) == [Episode.State.noValidator])
        #expect(probes(then).isEmpty, "no stream for nobody")
        #expect(bench.state.fetches.isEmpty && bench.state.probeID == nil)
    }

    @Test func withoutAValidatorTheStreamStartsAtByteZeroNotAtTheCachedPrefix() throws {
        // Cached by an earlier podfs without a validator: marked when restored.
        var bench = ReadBench(length: length, etag: nil, present: [0..<mib], handles: [], confirmed: false)
        #expect(bench.state.unstable == Episode.State.noValidator)
        let effects = bench.open(1)
        #expect(ReadBench.probes(effects).map(\.range) == [0..<EpisodeRecord.positions.upperBound], "one response for every byte")
        let stream = try #require(bench.state.streamID)
        #expect(bench.state.restartsStream(id: stream), "its head drops the cached part")
        // With a strong ETag, If-Range vouches for the continuation.
        var proven = ReadBench(length: length, present: [0..<mib])
        proven.stitched()
        #expect(ReadBench.fetched(proven.read(at: 2 * mib)) == [mib..<length])
    }

    /// A stream with no validator that stops part-way is asked again from
    /// byte 0, not from where it stopped: a response from there on could
    /// be another variant, and nothing in it would show that. Its head then
    /// replaces the part it brought (`restartsStream`). With a strong ETag
    /// the retry resumes where it stopped, under `If-Range`.
    @Test(arguments: [nil, "\"strong\""] as [String?])
    func aStreamWithoutAValidatorIsResumedFromByteZero(etag: String?) throws {
        var bench = ReadBench(length: length, etag: etag, present: [])
        if etag == nil {
            // The mount's check, answered without a validator, marked it.
            #expect(bench.state.unstable == Episode.State.noValidator)
        } else {
            bench.stitched()
        }
        _ = bench.read(at: 0)
        let stream = try #require(bench.state.streamID)
        // Its first 3 MiB arrive and are written.
        bench.land(0..<(3 * mib))
        #expect(bench.state.fetches[stream]?.cursor == 3 * mib && bench.state.fetches[stream]?.received == 3 * mib)
        let dropped = FetchError(isTransient: true, isUnreachable: false, message: "the connection dropped")
        let (end, _) = bench.state.fetchEnded(id: stream, error: dropped, attempt: 1, tuning: bench.tuning)
        guard case .retry(let range, let validator, _, _, _) = end else {
            Issue.record("a dropped stream is tried again: \(end)")
            return
        }
        let due = bench.state.retryDue(id: stream)
        if etag == nil {
            #expect(range.lowerBound == 0 && validator == nil)
            #expect(due.launched == Launched(range: 0..<EpisodeRecord.positions.upperBound, validator: nil, url: ReadBench.url))
            #expect(bench.state.restartsStream(id: stream), "its head drops the 3 MiB of the first response")
        } else {
            #expect(range == (3 * mib)..<length && validator == etag)
            #expect(due.launched == Launched(range: (3 * mib)..<length, validator: etag, url: ReadBench.url))
        }
    }

    /// A cache an earlier podfs filled from responses without a validator,
    /// none of them whole: maybe a mix. It is marked when restored, its
    /// open streams from byte 0, and that head drops it, saying why.
    @Test func aPartlyCachedEpisodeWithoutAValidatorFromAnEarlierMountIsFetchedAgainWhole() throws {
        let record = EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: length, etag: nil, lastModified: nil,
            ranges: [0..<mib, 3 * mib..<4 * mib])
        var state = Episode.State(restoring: record)
        #expect(state.unstable == Episode.State.noValidator)
        let check = state.startMountCheck()
        #expect(check == nil, "a mount's check would only bring another variant")
        let reply = Episode.OpenToken.fake()
        let opened = state.open(handle: 1, reply: reply, now: 1000, feedLength: length, tuning: tuning)
        let stream = try #require(opened.compactMap { if case .probe(let p) = $0 { p } else { nil } }.first)
        #expect(stream.range.lowerBound == 0)
        let (verdict, durable, then) = apply(&state, head(last: length - 1, total: length), id: stream.id)
        #expect(verdict == .accepted)
        #expect(durable.contains { if case .dropIndexRanges = $0 { true } else { false } })
        #expect(then.contains { if case .logUnproven(2 * 1024 * 1024) = $0 { true } else { false } })
        #expect(state.present.isEmpty)
        let answered = then.flatMap { effect -> [(Episode.OpenToken, Episode.OpenAnswer)] in
            if case .answerOpen(let token, let answer?) = effect { return [(token, answer)] }
            return []
        }
        #expect(answered.count == 1, "the open reads the stream's variant")
    }

    /// A complete one is no proof: an earlier podfs marked a file final
    /// however many responses made it. Its next open streams from byte 0
    /// all the same, and the stream's head replaces it; one this podfs
    /// kept from its one stream (marked) opens from the cache.
    @Test func aCompleteEpisodeWithoutAValidatorFromAnEarlierPodfsIsFetchedAgainWhole() throws {
        let whole = EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: length, etag: nil, lastModified: nil,
            ranges: [0..<length], variant: EpisodeVariant(pinnedURL: "http://o/a.mp3", isFinal: true))
        var state = Episode.State(restoring: whole)
        #expect(state.unprovenBytes && !state.isFinal)
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 1000, feedLength: length, tuning: tuning)
        let stream = try #require(opened.compactMap { if case .probe(let p) = $0 { p } else { nil } }.first)
        let (_, durable, then) = apply(&state, head(last: length - 1, total: length), id: stream.id)
        #expect(durable.contains { if case .dropIndexRanges = $0 { true } else { false } })
        #expect(then.contains { if case .logUnproven(let dropped) = $0 { dropped == length } else { false } })
        #expect(!state.unprovenBytes && state.present.isEmpty)
        var kept = whole
        kept.variant.unstable = Episode.State.noValidator.code
        var ours = Episode.State(restoring: kept)
        #expect(!ours.unprovenBytes && ours.isFinal)
        let reply = Episode.OpenToken.fake()
        let effects = ours.open(handle: 1, reply: reply, now: 1000, feedLength: length, tuning: tuning)
        #expect(effects.count == 1 && effects.allSatisfy { if case .answerOpen = $0 { true } else { false } }, "no request")
    }
}
