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

    /// An enclosure that moved to another file (`EpisodeReader.follow`):
    /// an idle episode starts afresh at the new link, so whoever holds the
    /// `Episode` from before the move (a keeper's download, a size check)
    /// asks the new link; one open is left as it is.
    @Test func anIdleEpisodeMovedToAnotherFileStartsAfreshAtTheNewLink() throws {
        let old = episode(record(length: 5_000, ranges: [0..<4_096]))
        #expect(old.state.withLock { $0.present.count } == 4_096)
        var stepsRan = false
        let moved = old.state.forgetIfIdle(movingTo: "http://new/b.mp3") {
            stepsRan = true
            return true
        }
        #expect(moved && stepsRan)
        #expect(old.state.withLock { ($0.present.isEmpty, $0.length, $0.linkToAsk) } == (true, nil, "http://new/b.mp3"))
        let effects = old.state.withLock {
            $0.open(handle: 1, reply: Episode.OpenToken.fake(), now: 10, feedLength: 5_000, tuning: EpisodeReader.Tuning())
        }
        let probe = effects.compactMap { if case .probe(let probe) = $0 { probe } else { nil } }.first
        #expect(probe?.url == "http://new/b.mp3", "the open of an Episode from before the move asks the new link")
        // The kernel's pages of the inode are the old file's: a first open
        // that waits for the probe (a feed with no length) keeps none.
        let unsized = episode(record(length: 5_000, ranges: [0..<4_096]))
        #expect(unsized.state.forgetIfIdle(movingTo: "http://new/b.mp3") { true })
        let waiting = unsized.state.withLock {
            $0.open(handle: 1, reply: Episode.OpenToken.fake(), now: 10, feedLength: nil, tuning: EpisodeReader.Tuning())
        }
        let probed = try #require(waiting.compactMap { if case .probe(let probe) = $0 { probe } else { nil } }.first)
        let head = FetchHead(
            status: 206, rangeFirst: 0, rangeLast: probed.range.upperBound - 1, total: 5_000,
            contentLength: probed.range.upperBound, etag: "\"n1\"", lastModified: nil, effectiveURL: "http://new/b.mp3")
        let context = Episode.State.HeadContext(now: 11, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let answered = unsized.state.withLock {
            let (_, transition) = $0.head(
                id: probed.id, head, start: 0, last: probed.range.upperBound - 1, total: 5_000, context: context)
            return transition.durable + transition.then
        }
        let opened = answered.compactMap { if case .answerOpen(_, let options?) = $0 { options } else { nil } }
        #expect(opened.map(\.keepCache) == [false], "the old file's pages are not kept: \(answered)")
        // Open now: nothing is forgotten, nothing runs.
        stepsRan = false
        #expect(!old.state.forgetIfIdle(movingTo: "http://newer/c.mp3") { stepsRan = true; return true })
        #expect(!stepsRan && old.state.withLock { $0.linkToAsk } == "http://new/b.mp3")
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
