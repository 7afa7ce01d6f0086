import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Continuity is checked, not assumed (docs/DESIGN.md, "Episodes and their
/// variants"): a response that shows an origin serving different bytes per
/// request marks the episode unstable, once, and the mark is kept.
@Suite struct UnstableOriginTests {
    private let mib = ReadBench.mib
    private let v1 = OriginVersion(length: 1000, etag: "\"a\"", lastModified: nil)

    private func reason(
        _ new: OriginVersion, confirmed: Bool = true, status: Int = 206, askedRange: Bool = true
    ) -> String? {
        Episode.State.unstableReason(
            was: v1, now: new, confirmedInThisMount: confirmed, status: status, askedRange: askedRange)?.description
    }

    // MARK: - The rule

    @Test func aLengthThatChangesWithinAMountIsUnstable() {
        let found = reason(OriginVersion(length: 1200, etag: "\"b\"", lastModified: nil))
        #expect(found?.contains("length changed") == true)
        #expect(found?.contains("1000 then 1200") == true)
    }

    @Test func aValidatorThatChangesWithinAMountIsUnstable() {
        #expect(reason(OriginVersion(length: 1000, etag: "\"b\"", lastModified: nil))?.contains("validator") == true)
    }

    @Test func anETagThatVanishesWithinAMountIsAnotherVersion() {
        let bare = OriginVersion(length: 1000, etag: nil, lastModified: nil)
        #expect(reason(bare)?.contains("vanished") == true)
        #expect(Episode.State.validatorVanished(was: v1, now: bare, confirmedInThisMount: true))
        #expect(!Episode.State.validatorVanished(was: v1, now: bare, confirmedInThisMount: false), "between mounts")
    }

    @Test func aChangeBetweenMountsIsANewVersionNotStitching() {
        #expect(reason(OriginVersion(length: 1200, etag: "\"b\"", lastModified: nil), confirmed: false) == nil)
        #expect(reason(OriginVersion(length: 1200, etag: "\"b\"", lastModified: nil), confirmed: false, status: 200) == nil)
    }

    @Test func aWholeBodyForARangeWithTheSameValidatorIsUnstable() {
        #expect(reason(v1, confirmed: false, status: 200)?.contains("HTTP 200") == true)
        #expect(reason(v1, confirmed: false, status: 200, askedRange: false) == nil, "the whole episode was asked")
        #expect(reason(v1, confirmed: true, status: 206) == nil, "an honest range answer")
    }

    // MARK: - The event

    @Test func theHeadMarksTheEpisodeOnceAndTheMarkIsRestored() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.read(at: 4 * mib)
        var state = bench.state
        var context = Episode.State.HeadContext(now: 5, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let id = try #require(state.fetches.keys.min())
        let other = FetchHead(
            status: 206, rangeFirst: 4 * mib, rangeLast: 5 * mib - 1, total: 11 * mib, contentLength: mib,
            etag: "\"v2\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let (_, transition) = state.head(id: id, other, start: 4 * mib, last: 5 * mib - 1, total: 11 * mib, context: context)
        let (_, then) = (transition.durable, transition.then)
        let marks = then.compactMap { effect -> StitchReason? in
            if case .markUnstable(let reason) = effect { return reason }
            return nil
        }
        #expect(marks.count == 1)
        #expect(state.unstable == marks.first)
        // A second change says nothing new (read by a file opened on the
        // variant now cached). Its open streams the episode; that stream's
        // head agrees and answers it, and the stream ends before it brings
        // a byte (the keeper gave way).
        let tuning = EpisodeReader.Tuning()
        let opened = state.open(handle: 2, reply: Episode.OpenToken.fake(), now: 6, feedLength: nil, tuning: tuning)
        context.now = 6
        let stream = try #require(ReadBench.probes(opened).first?.id)
        let same = FetchHead(
            status: 206, rangeFirst: 0, rangeLast: 11 * mib - 1, total: 11 * mib, contentLength: 11 * mib,
            etag: "\"v2\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        _ = state.head(id: stream, same, start: 0, last: 11 * mib - 1, total: 11 * mib, context: context)
        #expect(state.handles[2]?.generation == state.generation && state.validated)
        #expect(state.stopFills([stream]) == [stream])
        _ = state.fetchEnded(id: stream, error: nil, attempt: 1, tuning: tuning)
        _ = state.fetchSettled(id: stream, failure: nil, isBackground: false, minimumFetch: tuning.minimumFetch)
        _ = state.read(
            handle: 2, offset: 8 * mib, size: 10, reply: Episode.ReadToken.fake(),
            context: .init(now: 6, wallClock: 0, link: LinkEstimate(), tuning: tuning))
        let next = try #require(state.fetches.keys.max())
        #expect(next != id && next != stream && state.validated, "the read at 8 MiB started a stream of its own")
        do {
            let third = FetchHead(
                status: 206, rangeFirst: 0, rangeLast: 12 * mib - 1, total: 12 * mib, contentLength: 12 * mib,
                etag: "\"v3\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
            let again = state.head(
                id: next, third, start: 0, last: 12 * mib - 1, total: 12 * mib, context: context).1.then
            #expect(!again.contains { if case .markUnstable = $0 { true } else { false } })
        }
        let record = EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: 10 * mib, etag: "\"v1\"", lastModified: nil, ranges: [],
            variant: EpisodeVariant(unstable: "validator-changed"))
        #expect(Episode.State(restoring: record).unstable == .validatorChanged)
    }
}
