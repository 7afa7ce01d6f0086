import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// One variant per episode, pinned (docs/DESIGN.md, "Episodes and their
/// variants"): the link a response came from and its validator are kept,
/// across mounts, and later ranges go to that link.
@Suite struct PinnedVariantTests {
    private let mib = ReadBench.mib
    private let signed = "http://cdn.example/_variants/a.mp3.v1?sig=1"

    private func head(etag: String, at url: String, issuer: String? = "global", total: Int64) -> FetchHead {
        FetchHead(
            status: 206, rangeFirst: 0, rangeLast: mib - 1, total: total, contentLength: mib, etag: etag,
            lastModified: nil, effectiveURL: url, issuer: issuer)
    }

    private func apply(_ state: inout Episode.State, _ head: FetchHead, id: UInt64)
        -> (Episode.State.HeadVerdict, [Episode.State.Effect], [Episode.State.Effect])
    {
        var context = Episode.State.HeadContext(now: 5, feedLength: nil, isBackground: false, holdingIndexLock: false)
        var outcome = state.head(id: id, head, start: 0, last: mib - 1, total: head.total!, context: context)
        if outcome.0 == .needsIndexLock {
            context.holdingIndexLock = true
            outcome = state.head(id: id, head, start: 0, last: mib - 1, total: head.total!, context: context)
        }
        return (outcome.0, outcome.1.durable, outcome.1.then)
    }

    @Test func theLinkARedirectLedToIsPinnedWithItsValidator() throws {
        var bench = ReadBench(length: 10 * mib, etag: nil, confirmed: false)
        _ = bench.read(at: 0)
        var state = bench.state
        let id = try #require(state.fetches.keys.min())
        let (verdict, durable, then) = apply(&state, head(etag: "\"v1\"", at: signed, total: 10 * mib), id: id)
        #expect(verdict == .accepted)
        #expect(durable.isEmpty)
        #expect(then.contains { if case .saveVersionLater = $0 { true } else { false } })
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(snapshot.validator?.pinnedURL == signed)
        #expect(snapshot.validator?.pinnedIssuer == "global")
        #expect(snapshot.validator?.etag == "\"v1\"")
    }

    @Test func theSameVariantAtALinkNotPinnedYetIsSavedWithTheNextCommit() throws {
        // An index of schema 1: the validator is known, the link is not.
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.read(at: 4 * mib)
        var state = bench.state
        let id = try #require(state.fetches.keys.min())
        let (verdict, durable, _) = apply(&state, head(etag: "\"v1\"", at: signed, total: 10 * mib), id: id)
        #expect(verdict == .accepted)
        #expect(durable.isEmpty, "the same variant: nothing dropped")
        #expect(state.present.ranges == [0..<mib])
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(snapshot.validator?.pinnedURL == signed)
    }

    @Test func aNewVariantIsPinnedWithTheDrop() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], url: signed)
        _ = bench.read(at: 4 * mib)
        var state = bench.state
        let id = try #require(state.fetches.keys.min())
        let other = "http://cdn.example/_variants/a.mp3.v2?sig=2"
        let (_, durable, _) = apply(&state, head(etag: "\"v2\"", at: other, issuer: "loopback", total: 11 * mib), id: id)
        let saved = durable.compactMap { effect -> (String?, String?)? in
            if case .saveVersion(_, let url, let issuer) = effect { return (url, issuer) }
            return nil
        }
        #expect(saved.count == 1)
        #expect(saved.first?.0 == other)
        #expect(saved.first?.1 == "loopback")
    }

    @Test func aRestoredEpisodeAsksItsPinnedLink() {
        let record = EpisodeRecord(
            id: 1, key: "k", url: "http://feeds.example/a.mp3", length: 10 * mib, etag: "\"v1\"", lastModified: nil,
            ranges: [0..<mib], variant: EpisodeVariant(pinnedURL: signed, pinnedIssuer: "global"))
        var state = Episode.State(restoring: record)
        #expect(state.effectiveURL == signed)
        #expect(state.version.ifRange == "\"v1\"")
        // Gone (403, 404, 410): the enclosure URL is followed again.
        let forgot = state.forgetRedirect(enclosureURL: record.url)
        #expect(forgot)
        #expect(state.effectiveURL == nil && state.pinnedIssuer == nil)
    }
}
