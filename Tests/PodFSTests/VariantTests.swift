import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// What an episode's state knows of its variant (`Episode.Variant`): where
/// requests go, how the origin serves and whether the episode is final,
/// changed only through its transitions (docs/DESIGN.md, "Episodes and
/// their variants").
@Suite struct VariantTests {
    @Test func aRecordRestoresItsLinkItsMarkAndItsFinality() {
        let final = Episode.Variant(
            restoring: EpisodeVariant(pinnedURL: "http://cdn/v1", pinnedIssuer: "public", isFinal: true),
            unprovenBytes: false)
        let link = Episode.Variant.Link(url: "http://cdn/v1", issuer: "public")
        #expect(final.pinned == link)
        #expect(final.final == .from(link) && final.stitched == nil)
        let stitched = Episode.Variant(
            restoring: EpisodeVariant(unstable: StitchReason.etagVanished.code), unprovenBytes: false)
        #expect(stitched.route == .enclosure && stitched.stitched == .etagVanished && !stitched.unproven)
    }

    @Test func unprovenBytesAreAStitchingOriginsAndNeverFinal() {
        var variant = Episode.Variant(
            restoring: EpisodeVariant(pinnedURL: "http://cdn/v1", isFinal: true), unprovenBytes: true)
        #expect(variant.stitched == .noValidator && variant.unproven && variant.final == nil)
        // A new version's bytes are proven by their own responses.
        variant.bytesDropped()
        #expect(!variant.unproven && variant.stitched == .noValidator)
    }

    @Test func theFirstReasonStaysAndAStreamBelongsToIt() {
        var variant = Episode.Variant()
        let first = variant.markStitched(.lengthChanged(before: 1, after: 2))
        let second = variant.markStitched(.overlapMismatch)
        #expect(first && !second, "the second is not news")
        variant.streamStarted(7)
        variant.streamStarted(9)
        #expect(variant.serving == .stitched(.lengthChanged(before: 1, after: 2), stream: 9, unproven: false))
    }

    @Test func aForgottenLinkIsGoneOnlyWhenPartBytesOfItsVariantAreCached() {
        var partial = Episode.Variant()
        partial.pin("http://cdn/v1?sig=a", issuer: "public")
        partial.forgetRoute(final: false, cached: true)
        #expect(partial.route == .gone && partial.kept == nil, "its issuer went with it")
        partial.routeAnswered()
        #expect(partial.route == .enclosure)
        var empty = Episode.Variant()
        empty.pin("http://cdn/v1?sig=a", issuer: nil)
        empty.forgetRoute(final: false, cached: false)
        #expect(empty.route == .enclosure)
        // A final episode keeps its link and its issuer for the index.
        var final = Episode.Variant()
        final.pin("http://cdn/v1?sig=a", issuer: "public")
        final.becameFinal()
        final.forgetRoute(final: true, cached: true)
        #expect(final.route == .enclosure && final.kept == .init(url: "http://cdn/v1?sig=a", issuer: "public"))
        #expect(final.final == .from(.init(url: "http://cdn/v1?sig=a", issuer: "public")))
        // One that came through the enclosure unpinned keeps no link.
        var unpinned = Episode.Variant()
        unpinned.becameFinal()
        #expect(unpinned.final == .throughEnclosure && unpinned.kept == nil)
    }

    @Test func aMissingScratchFileForgetsItsRangesAndAReplacedVersionChangesNothing() {
        var bench = ReadBench(length: 4 * ReadBench.mib, present: [0..<ReadBench.mib])
        let stale = bench.state.scratchOpened(nil, generation: 5, fileMissing: true)
        #expect(stale.scratch == nil && !stale.forgot && bench.state.present.count == ReadBench.mib)
        let missing = bench.state.scratchOpened(nil, generation: 0, fileMissing: true)
        #expect(missing.forgot && bench.state.present.isEmpty && bench.state.unsaved.contains(.ranges))
    }
}
