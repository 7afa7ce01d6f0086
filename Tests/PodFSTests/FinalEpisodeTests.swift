import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A complete episode is kept (docs/DESIGN.md, "Episodes and their
/// variants"): final once every byte is cached, opened without asking the
/// origin, so no revalidation drops it.
@Suite struct FinalEpisodeTests {
    private let mib = ReadBench.mib

    /// What a mount restores of a complete episode the index marks final:
    /// 4 MiB, every byte cached, from `link` (pinned by `issuer`), with
    /// `unstable` if its origin was found to stitch. Nothing confirmed it
    /// in this mount yet.
    private func restoredFinal(link: String? = nil, issuer: String? = nil, unstable: StitchReason? = nil) -> Episode.State {
        Episode.State(restoring: EpisodeRecord(
            id: 1, key: "k", url: "http://feeds/a.mp3", length: 4 * mib, etag: "\"v1\"", lastModified: nil,
            ranges: [0..<(4 * mib)],
            variant: EpisodeVariant(pinnedURL: link, pinnedIssuer: issuer, unstable: unstable?.code, isFinal: true)))
    }

    @Test func anEpisodeWithEveryByteBecomesFinalWithTheNextCommit() {
        var state = ReadBench(length: 4 * mib, present: [0..<(4 * mib)]).state
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(state.isFinal)
        #expect(snapshot.validator?.isFinal == true)
        var partial = ReadBench(length: 4 * mib, present: [0..<mib]).state
        let none = partial.takeCommitSnapshot(key: "k")
        #expect(!partial.isFinal && none.validator == nil)
    }

    @Test func aFinalEpisodeOfAnUnstableOriginOpensWithoutAskingIt() {
        var state = restoredFinal(unstable: .validatorChanged)
        let effects = state.open(handle: 7, reply: Episode.OpenToken.fake(), now: 1, feedLength: nil, tuning: EpisodeReader.Tuning())
        #expect(effects.count == 1)
        #expect(effects.allSatisfy { if case .answerOpen = $0 { true } else { false } }, "answered, no probe")
        #expect(state.fetches.isEmpty)
        #expect(state.startMountCheck() == nil, "no mount check either")
    }

    @Test func anotherVariantAtAnotherLinkKeepsTheFinalEpisode() throws {
        var state = restoredFinal(link: "http://cdn/v1?sig=a")
        let effects = state.open(handle: 7, reply: Episode.OpenToken.fake(), now: 1, feedLength: nil, tuning: EpisodeReader.Tuning())
        let probe = try #require(effects.compactMap { if case .check(let p) = $0 { p } else { nil } }.first)
        let other = FetchHead(
            status: 200, rangeFirst: nil, rangeLast: nil, total: nil, contentLength: 5 * mib, etag: "\"v2\"",
            lastModified: nil, effectiveURL: "http://cdn/v2?sig=b")
        let context = Episode.State.HeadContext(now: 2, feedLength: nil, isBackground: false, holdingIndexLock: false)
        let (verdict, transition) = state.head(id: probe.id, other, start: 0, last: nil, total: 5 * mib, context: context)
        let (durable, then) = (transition.durable, transition.then)
        #expect(verdict == .accepted && durable.isEmpty, "nothing dropped, no index lock needed")
        #expect(state.present.ranges == [0..<(4 * mib)] && state.length == 4 * mib && state.etag == "\"v1\"")
        #expect(then.contains { if case .endAfterHead = $0 { true } else { false } })
        #expect(state.handles[7] != nil, "the open is answered on the kept variant")
        // The same link answering another version: a replaced file.
        #expect(!state.keepsFinal(answerFrom: "http://cdn/v1?sig=a"))
        // The pinned link gone (403): opens are answered from the cache.
        let forgot = state.forgetRedirect(enclosureURL: "http://feeds/a.mp3")
        #expect(!forgot, "no attempt through the enclosure")
        #expect(state.finalLinkGone)
        let later = state.open(handle: 8, reply: Episode.OpenToken.fake(), now: 3, feedLength: nil, tuning: EpisodeReader.Tuning())
        #expect(later.allSatisfy { if case .answerOpen = $0 { true } else { false } })
    }

    @Test func anOpenWhoseOwnProbeFindsThePinnedLinkGoneIsAnsweredFromTheCache() throws {
        // The order a remount from kept copies makes likely: the open comes
        // before the mount's check, so its own probe asks the pinned link.
        var state = restoredFinal(link: "http://cdn/v1?sig=a")
        let reply = Episode.OpenToken.fake()
        let effects = state.open(handle: 7, reply: reply, now: 1, feedLength: nil, tuning: EpisodeReader.Tuning())
        let probe = try #require(effects.compactMap { if case .check(let p) = $0 { p } else { nil } }.first)
        // The pinned link answers 403: the driver forgets it, and the fetch
        // ends refused (`EpisodeReader.fetch(_:receivedHead:)`).
        let forgot = state.forgetRedirect(enclosureURL: "http://feeds/a.mp3")
        #expect(!forgot, "no attempt through the enclosure")
        let refused = FetchError(isTransient: false, isUnreachable: false, message: "HTTP 403")
        let (ended, _) = state.fetchEnded(id: probe.id, error: refused, attempt: 1, tuning: EpisodeReader.Tuning())
        guard case .settle = ended else { Issue.record("a refused probe is not tried again"); return }
        let settled = state.fetchSettled(id: probe.id, failure: refused, isBackground: false, minimumFetch: 65536)
        let answers = settled.compactMap { if case .answerOpen(_, let options) = $0 { options } else { nil } }
        #expect(answers.isEmpty, "answered at once from the cache (`openFromTheCache`), and not failed now")
        #expect(effects.contains { if case .answerOpen = $0 { true } else { false } })
        #expect(!settled.contains { if case .fail = $0 { true } else { false } })
        #expect(state.handles[7] != nil)
    }

    @Test func aFinalEpisodeWhoseLinkIsGoneKeepsItAcrossMountsAndIsNotCheckedAgain() throws {
        var state = restoredFinal(link: "http://cdn/v1?sig=a", issuer: "public")
        // The mount's check finds the link gone (403).
        let started = state.startMountCheck()
        let check = try #require(started)
        let forgot = state.forgetRedirect(enclosureURL: "http://feeds/a.mp3")
        #expect(!forgot && state.finalLinkGone)
        let refused = FetchError(isTransient: false, isUnreachable: false, message: "HTTP 403")
        _ = state.fetchEnded(id: check.id, error: refused, attempt: 1, tuning: EpisodeReader.Tuning())
        _ = state.fetchSettled(id: check.id, failure: refused, isBackground: true, minimumFetch: 65536)
        // A second check (the remount's shows built later) does not follow
        // the enclosure to another variant.
        let again = state.startMountCheck()
        #expect(again == nil)
        // What the index keeps still names the final link and its zone
        // (the validator goes again after a failed commit).
        state.commitFailed(validatorIncluded: true)
        let snapshot = state.takeCommitSnapshot(key: "k")
        let saved = try #require(snapshot.validator)
        #expect(saved.pinnedURL == "http://cdn/v1?sig=a" && saved.pinnedIssuer == "public" && saved.isFinal)
    }

    @Test func evictionAndANewVersionEndFinality() throws {
        var state = restoredFinal()
        #expect(state.mayEvict)
        state.evicted()
        #expect(!state.isFinal && !state.isComplete)
        // Opened, and checked: the link it came from has a new version.
        var other = restoredFinal()
        let opened = other.open(handle: 7, reply: .fake(), now: 1, feedLength: nil, tuning: EpisodeReader.Tuning())
        let check = try #require(opened.compactMap { if case .check(let probe) = $0 { probe } else { nil } }.first)
        let replaced = FetchHead(
            status: 206, rangeFirst: 0, rangeLast: 0, total: 4 * mib, contentLength: 1, etag: "\"v2\"",
            lastModified: nil, effectiveURL: "http://feeds/a.mp3")
        let context = Episode.State.HeadContext(now: 2, feedLength: nil, isBackground: true, holdingIndexLock: true)
        _ = other.head(id: check.id, replaced, start: 0, last: 0, total: 4 * mib, context: context)
        #expect(other.generation == 1)
        #expect(!other.isFinal)
    }
}
