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

    /// An episode of 1000 bytes as a mount restores it, with `present`
    /// on disk and last read at `lastRead` (seconds since the epoch). When
    /// `wroteMore`, the mount's check (one byte past `present`, with
    /// `If-Range`) was answered and its byte written: ranges the index has
    /// not heard of.
    private static func restored(
        present: [Range<Int64>], lastRead: Int64? = nil, wroteMore: Bool = false
    ) -> Episode.State {
        var state = Episode.State(restoring: EpisodeRecord(
            id: 1, key: "e", url: "http://o/a.mp3", length: 1000, etag: "\"v1\"", lastModified: nil,
            ranges: present, lastRead: lastRead, variant: EpisodeVariant(pinnedURL: "http://o/a.mp3")))
        guard wroteMore else { return state }
        guard let check = state.startMountCheck() else {
            Issue.record("a restored episode is checked at mount")
            return state
        }
        let head = FetchHead(
            status: 206, rangeFirst: check.range.lowerBound, rangeLast: check.range.upperBound - 1, total: 1000,
            contentLength: 1, etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 1, feedLength: 1000, isBackground: true, holdingIndexLock: true)
        _ = state.head(
            id: check.id, head, start: check.range.lowerBound, last: check.range.upperBound - 1, total: 1000,
            context: context)
        _ = state.bodyArrived(id: check.id, count: 1)
        _ = [UInt8](repeating: 7, count: 1).withUnsafeBytes { bytes in
            state.bodyWritten(id: check.id, range: check.range, generation: 0, written: true, bytes: bytes, spillLimit: 0)
        }
        return state
    }

    /// An episode of `length` bytes, confirmed, nothing cached, and file 1
    /// reading 4 KiB: from byte 0 (its read-ahead's fetch of a window,
    /// whose reader waits for the disk) or, when `jumped`, at 5 MiB of a
    /// near origin (a short fetch of what it asked, answered on arrival).
    /// The fetch's head came. Returns the bench and the fetch's id.
    private func waiting(jumped: Bool = false, length: Int64? = nil) -> (ReadBench, UInt64) {
        var bench = ReadBench(length: length ?? 10 * mib)
        if jumped { bench.link.observe(latency: 0.0002) }
        let effects = bench.read(at: jumped ? 5 * mib : 0, size: 4096)
        guard case .fetch(let id, let range)? = effects.first(where: { if case .fetch = $0 { true } else { false } })
        else {
            Issue.record("a read of nothing cached fetches: \(effects)")
            return (bench, 0)
        }
        // (A fetch of a whole 1000-byte episode is short, whoever asks.)
        if length == nil { #expect(bench.state.fetches[id]?.answersOnArrival == jumped) }
        #expect(bench.state.waiters.count == 1)
        bench.head(id, range)
        return (bench, id)
    }

    private let bytes = [UInt8](repeating: 7, count: 64 * 1024)

    @Test func arrivedBytesAreNotPresentUntilWritten() {
        let (bench, id) = waiting()
        var state = bench.state
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
        let (bench, id) = waiting(jumped: true)
        var state = bench.state
        let arrival = state.bodyArrived(id: id, count: 64 * 1024)
        #expect(arrival?.early.count == 1)
        #expect(state.waiters.isEmpty)
        #expect(state.present.isEmpty, "answered from memory, not marked present")
    }

    @Test func moreThanAnnouncedIsCut() {
        // An episode of 1000 bytes: its fetch announced 1000.
        let (bench, id) = waiting(length: 1000)
        var state = bench.state
        #expect(state.fetches[id]?.upper == 1000)
        #expect(state.bodyArrived(id: id, count: 4096)?.count == 1000)
    }

    @Test func bytesOfAReplacedVersionAreNeitherWrittenNorMarked() throws {
        var (bench, id) = waiting()
        let arrived = bench.state.bodyArrived(id: id, count: 4096)
        let arrival = try #require(arrived)
        // Before they are written, an open an hour on finds a new version.
        bench.now += bench.tuning.revalidateAfter
        let probe = try #require(ReadBench.probes(bench.open(2)).first)
        bench.head(probe.id, probe.range, etag: "\"v2\"")
        var state = bench.state
        #expect(state.generation == arrival.generation + 1)
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
        let (bench, id) = waiting()
        var state = bench.state
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
        let (bench, id) = waiting()
        var state = bench.state
        // The reader closed its file while its fetch ran.
        _ = state.release(handle: 1, now: bench.now)
        #expect(state.handles.isEmpty)
        _ = bytes.withUnsafeBytes { bytes in
            state.bodyWritten(id: id, range: 0..<64 * kib, generation: 0, written: false, bytes: bytes, spillLimit: 1 << 20)
        }
        #expect(state.spill.isEmpty)
    }

    // MARK: - Guarantee 1: sync, then commit

    @Test func theFlushSyncsEveryFileBeforeItCommits() {
        // Restored with 10 bytes each (the first last read at 5); the
        // first and the last wrote more.
        var states = (0..<3).map { index in
            Self.restored(present: [0..<10], lastRead: index == 0 ? 5 : nil, wroteMore: index != 1)
        }
        #expect(states.map { $0.unsaved.contains(.ranges) } == [true, false, true])
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
        var state = Self.restored(present: [0..<10], wroteMore: true)
        #expect(state.unsaved.contains(.ranges) && state.scratch == nil)
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
