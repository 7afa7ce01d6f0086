import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// `Episode.StateCell` (docs/DESIGN.md, "Threads and the lock order"): a
/// listed file's read state is made when an event first needs it; `stat`
/// and size queries never make it, and what `stat` told the kernel is
/// remembered for when it is made.
@Suite struct EpisodeStateCellTests {
    private func episode(_ record: EpisodeRecord?) -> Episode {
        Episode(
            inode: 7, parent: 1, key: "k", url: "http://origin/a.mp3", guid: nil, name: "a.mp3",
            modificationTime: 0, feedLength: 1_000, record: record)
    }

    private func record(length: Int64? = nil, ranges: [Range<Int64>] = []) -> EpisodeRecord {
        EpisodeRecord(
            id: 1, key: "k", url: "http://origin/a.mp3", length: length, etag: nil, lastModified: nil, ranges: ranges)
    }

    @Test func aListedFileHoldsNoStateUntilAnEventNeedsIt() {
        let file = episode(record())
        #expect(!file.state.isMade)
        // What a listing asks: size, attributes, cached bytes, variant.
        #expect(file.size == 1_000)
        #expect(file.attributes(timeout: 5).0.size == 1_000)
        #expect(file.cachedBytes == 0)
        #expect(file.variantSummary == "one variant")
        #expect(!file.state.isMade)
        // An event makes it.
        #expect(file.state.withLock { $0.length } == nil)
        #expect(file.state.isMade)
    }

    @Test func aStatBeforeTheStateIsMadeIsRememberedByIt() {
        let cell = Episode.StateCell(nil)
        let shown = cell.sizeShown(feedLength: 1_000, timeout: 5, now: 10)
        #expect(shown.size == 1_000 && shown.timeout == 5)
        // The open that follows knows the kernel keeps the claim until 16
        // (a second more than told) and drops it first.
        #expect(cell.withLock { $0.claimKeptUntil } == 16)
        let effects = cell.withLock {
            $0.open(handle: 1, reply: Episode.OpenToken.fake(), now: 11, feedLength: 1_000, tuning: EpisodeReader.Tuning())
        }
        let dropped = effects.contains { effect in
            if case .answerOpen(_, let options?) = effect { return options.dropAttributes }
            return false
        }
        #expect(dropped)
    }

    @Test func anEpisodeTheIndexHoldsSomethingOfIsMadeAtOnce() {
        #expect(episode(record(length: 4_096, ranges: [0..<1_024])).state.isMade)
        #expect(episode(record(length: 4_096)).state.isMade)
        #expect(!episode(nil).state.isMade)
    }
}
