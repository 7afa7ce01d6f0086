import Locking
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The response-head event: bad answers, real sizes, no mixed versions
/// (guarantees 3, 4 and 6 of docs/DESIGN.md), the open's probe.
@Suite struct HeadStateTests {
    private let mib = ReadBench.mib

    private func head(
        _ status: Int, first: Int64? = nil, last: Int64? = nil, total: Int64? = nil, contentLength: Int64? = nil,
        etag: String? = "\"v1\""
    ) -> FetchHead {
        FetchHead(
            status: status, rangeFirst: first, rangeLast: last, total: total, contentLength: contentLength,
            etag: etag, lastModified: nil, effectiveURL: "http://o/a.mp3")
    }

    /// An episode nothing is known of (no record in the index), opened as
    /// file `handle` with the feed's claimed `feedLength`: its probe is on
    /// its way. Returns the probe's fetch id.
    private func opened(
        _ state: inout Episode.State, handle: UInt64 = 1, feedLength: Int64? = 1000
    ) -> UInt64? {
        let effects = state.open(
            handle: handle, reply: .fake(), now: 5, feedLength: feedLength, tuning: EpisodeReader.Tuning())
        return ReadBench.probes(effects).first?.id
    }

    /// A read of file `handle`, as the kernel sends it.
    private func read(
        _ state: inout Episode.State, handle: UInt64, at offset: Int64, size: Int = 4096
    ) -> [Episode.State.Effect] {
        state.read(
            handle: handle, offset: offset, size: size, reply: .fake(),
            context: .init(now: 5, wallClock: 0, link: LinkEstimate(), tuning: EpisodeReader.Tuning()))
    }

    private func context(lock: Bool = false, background: Bool = false) -> Episode.State.HeadContext {
        Episode.State.HeadContext(now: 5, feedLength: 1000, isBackground: background, holdingIndexLock: lock)
    }

    /// Applies `head` to fetch `id` as the driver does: again under the
    /// index lock when it asks for it.
    private func apply(
        _ state: inout Episode.State, _ head: FetchHead, id: UInt64, background: Bool = false
    ) -> (Episode.State.HeadVerdict, [Episode.State.Effect], [Episode.State.Effect]) {
        guard case .body(let start, let last, let total) = Episode.State.reading(head) else {
            Issue.record("\(head) has a body")
            return (.stale, [], [])
        }
        var outcome = state.head(id: id, head, start: start, last: last, total: total, context: context(background: background))
        if outcome.0 == .needsIndexLock {
            outcome = state.head(id: id, head, start: start, last: last, total: total, context: context(lock: true, background: background))
        }
        return (outcome.0, outcome.1.durable, outcome.1.then)
    }

    // MARK: - Bad answers

    @Test func aRangeAnswerWithoutContentRangeIsRefused() {
        guard case .unusable(let reason) = Episode.State.reading(head(206, contentLength: 10)) else {
            Issue.record("a 206 needs Content-Range")
            return
        }
        #expect(reason.contains("Content-Range"))
    }

    @Test func anAnswerWithoutALengthIsRefused() {
        guard case .unusable = Episode.State.reading(head(200)) else {
            Issue.record("a 200 needs Content-Length")
            return
        }
        guard case .unusable = Episode.State.reading(head(206, first: 0, last: 9)) else {
            Issue.record("a 206 needs Content-Range's total")
            return
        }
    }

    @Test func otherStatusesGoToTheClassifier() {
        #expect(Episode.State.reading(head(503)) == .status)
        #expect(Episode.State.reading(head(404)) == .status)
    }

    @Test func aFinalAnswerForgetsTheRedirectOnce() {
        // The enclosure redirected to a signed link, which answered.
        var state = ReadBench(length: 1000, url: "http://cdn/signed").state
        #expect(state.effectiveURL == "http://cdn/signed")
        let forgot = state.forgetRedirect(enclosureURL: "http://o/a.mp3")
        #expect(forgot)
        #expect(state.effectiveURL == nil)
        let again = state.forgetRedirect(enclosureURL: "http://o/a.mp3")
        #expect(!again)
    }

    // MARK: - Guarantee 4: real sizes

    @Test func theSizeIsContentRangesTotalNotA206sContentLength() throws {
        // Nothing known but the feed's claim of 1000 bytes; the open's probe asks.
        var state = Episode.State()
        let id = try #require(opened(&state))
        #expect(state.length == nil)
        let (verdict, durable, then) = apply(&state, head(206, first: 0, last: 262_143, total: 5 * mib, contentLength: 262_144), id: id)
        #expect(verdict == .accepted)
        #expect(durable.isEmpty, "nothing cached of another version: nothing to drop")
        #expect(state.length == 5 * mib)
        #expect(state.fetches[id]?.upper == 262_144)
        // The kernel saw the feed's 1000 bytes: its attributes go, not its pages.
        #expect(then.contains { if case .invalidateKernel(pages: false) = $0 { true } else { false } })
        #expect(then.contains { if case .saveVersionLater = $0 { true } else { false } })
    }

    @Test func rangeNotSatisfiableStillTellsTheLength() {
        var bench = ReadBench(length: 1000)
        _ = bench.read(at: 0)
        var state = bench.state
        let id = state.fetches.keys.min()!
        let (verdict, _, _) = apply(&state, head(416, total: 1000), id: id)
        #expect(verdict == .accepted)
        #expect(state.fetches[id]?.upper == state.fetches[id]?.cursor, "no body is expected")
    }

    // MARK: - Guarantee 3: no mixed versions

    @Test func aChangedValidatorDropsTheOldVersionUnderTheIndexLock() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: [1, 2])
        _ = bench.read(1, at: 5 * mib)
        var state = bench.state
        let id = state.fetches.keys.min()!
        let answer = head(206, first: 5 * mib, last: 6 * mib - 1, total: 10 * mib, etag: "\"v2\"")
        guard case .body(let start, let last, let total) = Episode.State.reading(answer) else {
            Issue.record("a 206 with its Content-Range is read as a body")
            return
        }
        let first = state.head(id: id, answer, start: start, last: last, total: total, context: context())
        #expect(first.0 == .needsIndexLock)
        #expect(state.generation == 0, "nothing changes before the index lock is held")
        let (verdict, transition) = state.head(id: id, answer, start: start, last: last, total: total, context: context(lock: true))
        let (durable, then) = (transition.durable, transition.then)
        #expect(verdict == .accepted)
        // Drop first, then save the new version; both before any new byte.
        guard durable.count == 2, case .dropIndexRanges = durable[0], case .saveVersion(let version, _, _) = durable[1] else {
            Issue.record("the index forgets the old ranges, then learns the new version: \(durable)")
            return
        }
        #expect(version.etag == "\"v2\"")
        #expect(state.present.isEmpty)
        #expect(state.generation == 1)
        #expect(then.filter { if case .fail = $0 { true } else { false } }.count == 1)
        #expect(then.contains { if case .invalidateKernel(pages: true) = $0 { true } else { false } })
        // The handle opened on the old version reads EIO for the bytes that
        // version never had (what it had: RetiredVersionTests).
        let late = state.read(
            handle: 2, offset: 2 * mib, size: 10, reply: Episode.ReadToken.fake(),
            context: .init(now: 0, wallClock: 0, link: LinkEstimate(), tuning: EpisodeReader.Tuning()))
        #expect(ReadBench.failed(late) == 1)
    }

    @Test func aPartialVariantWhoseLinkIsGoneIsDroppedAndSaidSo() {
        // 1 MiB of a variant cached from a signed link that now answers 403;
        // the enclosure leads to another variant (another ETag).
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], url: "http://cdn/v1?sig=a")
        _ = bench.read(at: 5 * mib)
        var state = bench.state
        let id = state.fetches.keys.min()!
        let forgot = state.forgetRedirect(enclosureURL: "http://o/a.mp3")
        #expect(forgot, "tried again through the enclosure")
        let other = head(206, first: 5 * mib, last: 6 * mib - 1, total: 10 * mib, etag: "\"v2\"")
        let (verdict, _, then) = apply(&state, other, id: id)
        #expect(verdict == .accepted && state.present.isEmpty)
        #expect(then.contains { if case .logVariantGone(dropped: mib) = $0 { true } else { false } }, "\(then)")
        #expect(!then.contains { if case .logChanged = $0 { true } else { false } })
        #expect(!state.pinnedRouteGone, "said once")
    }

    @Test func aChangedLengthIsANewVersionToo() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.read(at: 5 * mib)
        var state = bench.state
        let id = state.fetches.keys.min()!
        let (_, durable, _) = apply(&state, head(206, first: 5 * mib, last: 6 * mib - 1, total: 11 * mib), id: id)
        #expect(durable.contains { if case .dropIndexRanges = $0 { true } else { false } })
        #expect(state.length == 11 * mib)
    }

    @Test func theSameVersionKeepsWhatIsCached() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.read(at: 5 * mib)
        var state = bench.state
        let id = state.fetches.keys.min()!
        let (verdict, durable, _) = apply(&state, head(206, first: 5 * mib, last: 6 * mib - 1, total: 10 * mib), id: id)
        #expect(verdict == .accepted)
        #expect(durable.isEmpty)
        #expect(state.present.count == mib)
        #expect(state.validated)
    }

    @Test func aHeadForAnOlderVersionIsStale() throws {
        var bench = ReadBench(length: 10 * mib, handles: [1, 2])
        _ = bench.read(1, at: 0)
        let id = bench.state.fetches.keys.min()!
        // Before its head, an open an hour on finds a new version.
        bench.now += bench.tuning.revalidateAfter
        let probe = try #require(ReadBench.probes(bench.open(2)).first)
        bench.head(probe.id, probe.range, etag: "\"v2\"")
        #expect(bench.state.generation == 1)
        var state = bench.state
        #expect(apply(&state, head(206, first: 0, last: 9, total: 10 * mib), id: id).0 == .stale)
        #expect(state.generation == 1 && state.present.isEmpty, "the old fetch's head changes nothing")
    }

    @Test func aWholeBodyWhereARangeWasAskedIsNotedOnce() {
        // Two readers jump to two places: two ranges asked.
        var bench = ReadBench(length: 10 * mib, handles: [1, 2])
        _ = bench.read(1, at: 5 * mib)
        _ = bench.read(2, at: 3 * mib)
        var state = bench.state
        let ids = state.fetches.keys.sorted()
        #expect(ids.count == 2 && state.fetches[ids[1]]?.cursor == 3 * mib)
        let (id, second) = (ids[0], ids[1])
        let (_, _, then) = apply(&state, head(200, contentLength: 10 * mib), id: id)
        #expect(then.contains { if case .logIgnoresRange = $0 { true } else { false } })
        #expect(state.fetches[id]?.cursor == 0 && state.fetches[id]?.upper == 10 * mib, "streamed from its start")
        // A second such answer is not logged again (`Episode.Warning`).
        let (_, _, again) = apply(&state, head(200, contentLength: 10 * mib), id: second)
        #expect(!again.contains { if case .logIgnoresRange = $0 { true } else { false } })
        #expect(state.warned == [.ignoresRange])
    }

    // MARK: - The open's probe

    @Test func theProbesHeadAnswersTheWaitingOpensAndEarlyReads() throws {
        // Nothing cached: file 8 opens at once (the feed claims a size) and
        // its probe asks the first 256 KiB; file 8 reads there and past it.
        var state = Episode.State()
        let id = try #require(opened(&state, handle: 8, feedLength: 1000 * 1000))
        #expect(state.fetches[id]?.upper == 262_144 && state.probeID == id)
        #expect(read(&state, handle: 8, at: 0).isEmpty && read(&state, handle: 8, at: 900_000).isEmpty)
        // File 7, with no size from the feed, waits for the probe's answer.
        #expect(opened(&state, handle: 7, feedLength: nil) == nil)
        #expect(state.handles[7] == nil && state.isProvisional(8) && state.earlyReads.count == 2)
        let (verdict, _, then) = apply(&state, head(206, first: 0, last: 262_143, total: 1000 * 1000), id: id)
        #expect(verdict == .accepted)
        #expect(state.probeID == nil && state.validated)
        #expect(state.handles[7] != nil && state.handles[8] != nil && !state.isProvisional(8))
        let opened = then.compactMap { if case .answerOpen(_, let answer?) = $0 { answer.handle } else { nil } }
        #expect(opened == [7])
        for effect in then {
            if case .resume(let reads, _) = effect { #expect(reads.map(\.offset) == [0], "within the probe's bytes now") }
        }
        // Beyond them when it ends.
        let settled = state.fetchSettled(id: id, failure: nil, isBackground: false, minimumFetch: 65_536)
        let resumed = settled.flatMap { effect -> [Int64] in
            if case .resume(let reads, _) = effect { return reads.map(\.offset) }
            return []
        }
        #expect(resumed == [900_000], "beyond the probe's bytes, made when it ends")
    }

    @Test func aMountsCheckAnsweredWholeStopsAfterItsHead() throws {
        // Restored from the index (1000 bytes, no ETag), checked at mount.
        var state = Episode.State(restoring: EpisodeRecord(
            id: 1, key: "e", url: "http://o/a.mp3", length: 1000, etag: nil, lastModified: nil, ranges: []))
        let id = try #require(state.startMountCheck()?.id)
        #expect(state.fetches[id]?.upper == 1)
        let (_, _, then) = apply(&state, head(200, contentLength: 1000), id: id, background: true)
        #expect(then.contains { if case .endAfterHead = $0 { true } else { false } })
    }
}
