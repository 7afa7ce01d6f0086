import Foundation
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The body and commit events: bytes are `present` only once written, the
/// flush syncs before it commits (guarantee 1 of docs/DESIGN.md), and a
/// full disk serves from memory without the index hearing of it.
@Suite struct BodyStateTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024

    /// An episode as a mount restores it, with `present` on disk.
    private static func restored(present: [Range<Int64>]) -> Episode.State {
        var state = Episode.State()
        state.current = .restored(length: 1000, present: present)
        return state
    }

    /// An episode with one reader waiting for `0..<4 KiB`, its fetch on its way.
    private func waiting(answersOnArrival: Bool = false) -> (Episode.State, UInt64, Episode.ReadToken) {
        var state = Episode.State()
        state.current = .restored(length: 10 * mib, etag: nil)
        state.handles[1] = Episode.HandleState(generation: 0)
        let reply = Episode.ReadToken.fake()
        state.waiters = [Episode.Waiter(range: 0..<4 * kib, reply: reply, generation: 0, handle: 1, stance: .following)]
        let id = state.takeFetchID()
        state.fetches[id] = Episode.FetchProgress(
            cursor: 0, upper: 512 * kib, generation: 0, answersOnArrival: answersOnArrival)
        return (state, id, reply)
    }

    private let bytes = [UInt8](repeating: 7, count: 64 * 1024)

    @Test func arrivedBytesAreNotPresentUntilWritten() {
        var (state, id, _) = waiting()
        let arrival = state.bodyArrived(id: id, count: 64 * 1024)
        #expect(arrival?.offset == 0 && arrival?.count == 64 * 1024)
        #expect(state.present.isEmpty && !state.unsaved.contains(.ranges), "arrived is not on disk")
        #expect(state.waiters.count == 1, "a read-ahead's reader waits for the disk")
        let ready = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: id, range: 0..<64 * kib, generation: 0, written: true, bytes: bytes, spillLimit: 1 << 20)
        }
        #expect(state.present.contains(0..<64 * kib) && state.unsaved.contains(.ranges))
        #expect(ready?.count == 1 && state.waiters.isEmpty)
        #expect(state.fetches[id]?.cursor == 64 * kib)
    }

    @Test func aShortFetchAnswersItsReaderOnArrival() {
        var (state, id, _) = waiting(answersOnArrival: true)
        let arrival = state.bodyArrived(id: id, count: 64 * 1024)
        #expect(arrival?.early.count == 1)
        #expect(state.waiters.isEmpty)
        #expect(state.present.isEmpty, "answered from memory, not marked present")
    }

    @Test func moreThanAnnouncedIsCut() {
        var (state, id, _) = waiting()
        state.fetches[id]?.upper = 1000
        #expect(state.bodyArrived(id: id, count: 4096)?.count == 1000)
    }

    @Test func bytesOfAReplacedVersionAreNeitherWrittenNorMarked() {
        var (state, id, _) = waiting()
        let arrival = state.bodyArrived(id: id, count: 4096)!
        state.current.replaced()
        #expect(state.writeTarget(id: id, generation: arrival.generation, range: 0..<4096, step: 8 * mib) == nil)
        let ready = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: id, range: 0..<4096, generation: arrival.generation, written: true, bytes: bytes, spillLimit: 1 << 20)
        }
        #expect(ready == nil)
        #expect(state.present.isEmpty)
        #expect(state.bodyArrived(id: id, count: 4096) == nil, "a stale fetch stops")
    }

    // MARK: - Disk full

    @Test func aFullDiskServesFromMemoryAndTheIndexNeverHears() {
        var (state, id, _) = waiting()
        _ = state.bodyArrived(id: id, count: 64 * 1024)
        let ready = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: id, range: 0..<64 * kib, generation: 0, written: false, bytes: bytes, spillLimit: 1 << 20)
        }
        #expect(state.present.isEmpty && !state.unsaved.contains(.ranges), "not written: never committed")
        #expect(ready?.count == 1)
        #expect(ready?.first?.spilled.isEmpty == false, "answered from memory")
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(snapshot.ranges == nil)
    }

    @Test func withNoFileOpenUnwrittenBytesAreDropped() {
        var (state, id, _) = waiting()
        state.handles = [:]
        _ = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: id, range: 0..<64 * kib, generation: 0, written: false, bytes: bytes, spillLimit: 1 << 20)
        }
        #expect(state.spill.isEmpty)
    }

    // MARK: - Guarantee 1: sync, then commit

    @Test func theFlushSyncsEveryFileBeforeItCommits() {
        // Restored with 10 bytes each; the first and the last wrote more.
        var states = (0..<3).map { _ in Self.restored(present: [0..<10]) }
        for index in [0, 2] { states[index].unsaved.insert(.ranges) }
        states[0].lastRead = 5
        var snapshots = states.indices.map { states[$0].takeCommitSnapshot(key: "e\($0)") }
        // Files are opened by the driver; a token stands in for one here.
        let file = Episode.FileToken.fake()
        snapshots[0].scratch = file
        snapshots[2].scratch = file
        let plan = Episode.State.commitPlan(snapshots)
        #expect(plan == [.sync(index: 0), .sync(index: 2), .commit, .touch(index: 0)])
        #expect(states[0].unsaved.isEmpty && states[2].unsaved.isEmpty)
    }

    @Test func rangesWithoutAFileAreNeverCommitted() {
        var state = Self.restored(present: [0..<10])
        state.unsaved.insert(.ranges)
        let plan = Episode.State.commitPlan([state.takeCommitSnapshot(key: "k")])
        #expect(plan == [.commit])
    }

    /// From events alone: an open's probe answered, its bytes written,
    /// a flush whose commit failed. The next flush lists the same ranges
    /// and validator again; nothing is lost.
    @Test func aFailedCommitIsTriedAgain() throws {
        var state = Episode.State()
        let opened = state.open(handle: 1, reply: .fake(), now: 1, feedLength: nil, tuning: EpisodeReader.Tuning())
        let probe = try #require(opened.compactMap { if case .probe(let p) = $0 { p } else { nil } }.first)
        let head = FetchHead(
            status: 206, rangeFirst: 0, rangeLast: 64 * kib - 1, total: 10 * mib, contentLength: 64 * kib,
            etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 1, feedLength: nil, isBackground: false, holdingIndexLock: false)
        #expect(state.head(id: probe.id, head, start: 0, last: 64 * kib - 1, total: 10 * mib, context: context).0 == .accepted)
        _ = state.bodyArrived(id: probe.id, count: 64 * 1024)
        _ = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: probe.id, range: 0..<64 * kib, generation: 0, written: true, bytes: bytes, spillLimit: 1 << 20)
        }
        let first = state.takeCommitSnapshot(key: "k")
        #expect(first.ranges == [0..<64 * kib] && first.validator?.etag == "\"v1\"")
        #expect(state.takeCommitSnapshot(key: "k").ranges == nil, "committed once, unless it fails")
        state.commitFailed(validatorIncluded: true)
        let again = state.takeCommitSnapshot(key: "k")
        #expect(again.ranges == first.ranges && again.validator == first.validator)
    }
}
