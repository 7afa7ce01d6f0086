import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A show that stitches (docs/DESIGN.md, "A show that stitches"): an
/// episode that holds nothing (no byte, nothing open or on its way) takes
/// its show's mark and is streamed whole from its first open; one with
/// bytes, a fetch or a mark of its own keeps them.
@Suite struct ShowStitchesTests {
    private let mib = ReadBench.mib

    @Test func anEpisodeThatHoldsNothingIsStreamedWholeFromItsFirstOpen() throws {
        var state = Episode.State()
        #expect(state.inheritStitching() == Episode.State.showStitches)
        let effects = state.open(
            handle: 7, reply: Episode.OpenToken.fake(), now: 1, feedLength: 6 * mib, tuning: EpisodeReader.Tuning())
        // No answer before the stream's head: the file opens on the one
        // variant the stream brings, from its first byte to its last.
        #expect(effects.count == 1)
        guard case .probe(let probe) = try #require(effects.first) else {
            Issue.record("a probe, not \(effects)")
            return
        }
        #expect(probe.range == 0..<EpisodeRecord.positions.upperBound)
        #expect(state.streamID == probe.id)
        #expect(state.openWaiters.count == 1 && state.handles.isEmpty)
    }

    @Test func anEpisodeWithItsOwnEvidenceKeepsIt() {
        // Bytes cached (of a variant this mount may confirm).
        var cached = ReadBench(length: 4 * mib, present: [0..<mib], handles: []).state
        #expect(cached.inheritStitching() == nil)
        #expect(cached.unstable == nil)
        // Evicted: its length and validator are known, no byte is left.
        // It holds nothing a new variant could clash with, and is marked.
        var evicted = ReadBench(length: 4 * mib, present: [], handles: []).state
        #expect(evicted.inheritStitching() == Episode.State.showStitches)
        // Marked for a reason of its own: the reason stays.
        // (The index kept the mark; nothing is cached.)
        var marked = Episode.State(restoring: EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: 4 * mib, etag: "\"v1\"", lastModified: nil, ranges: [],
            variant: EpisodeVariant(unstable: StitchReason.lengthChanged(before: nil, after: nil).code)))
        #expect(marked.inheritStitching() == nil)
        #expect(marked.unstable == .lengthChanged(before: nil, after: nil))
        // Its probe is on its way.
        var probing = Episode.State()
        _ = probing.open(handle: 1, reply: Episode.OpenToken.fake(), now: 1, feedLength: 4 * mib, tuning: EpisodeReader.Tuning())
        #expect(!probing.fetches.isEmpty)
        #expect(probing.inheritStitching() == nil)
    }
}
