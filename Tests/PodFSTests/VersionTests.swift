import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The cached version's transitions (`Episode.Version`): what a write, a
/// replacement and a restore leave, and what the index hears of.
@Suite struct VersionTests {
    private let mib = ReadBench.mib

    @Test func aWriteIsNewsOnceAndMarksTheVersionAsHavingHadBytes() {
        var version = Episode.Version.restored(length: 10 * mib)
        #expect(!version.hadBytes)
        let first = version.wrote(0..<mib)
        let again = version.wrote(4096..<8192)
        #expect(first && !again, "a check of a cached byte is written again: no news")
        #expect(version.hadBytes && version.present == RangeSet([0..<mib]))
    }

    @Test func aReplacedVersionStartsWithNothingCachedOrAgreed() {
        var version = Episode.Version.restored(length: 10 * mib, present: [0..<mib])
        version.agree()
        version.replaced()
        #expect(version.generation == 1 && version.present.isEmpty && !version.hadBytes && !version.agreed)
        // Its length and validators are told by the head that replaced it.
        version.tell(length: 9 * mib, etag: "\"v2\"", lastModified: nil)
        #expect(version.told == OriginVersion(length: 9 * mib, etag: "\"v2\"", lastModified: nil))
    }

    /// No podfs writes ranges without a length; an index that has them
    /// (edited by hand) is not trusted, and the next commit forgets them.
    @Test func rangesWithoutALengthAreNotRestored() {
        let record = EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: nil, etag: nil, lastModified: nil, ranges: [0..<mib])
        let state = Episode.State(restoring: record)
        #expect(state.present.isEmpty && state.length == nil)
        var committing = state
        let snapshot = committing.takeCommitSnapshot(key: "k")
        #expect(snapshot.ranges == [], "the index forgets them")
        #expect(Episode.State.commitPlan([snapshot]) == [.sync(index: 0), .commit], "with no file to sync")
    }

    @Test func aFailedCommitKeepsBothKindsOfNewsForTheNextFlush() throws {
        // Nothing known: the open's probe of 1 MiB tells the version and
        // brings its bytes, which are written.
        var state = Episode.State()
        var tuning = EpisodeReader.Tuning()
        tuning.minimumFetch = mib
        let opened = state.open(handle: 1, reply: .fake(), now: 1, feedLength: 10 * mib, tuning: tuning)
        let probe = try #require(ReadBench.probes(opened).first)
        let head = FetchHead(
            status: 206, rangeFirst: 0, rangeLast: mib - 1, total: 10 * mib, contentLength: mib, etag: "\"v1\"",
            lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 1, feedLength: 10 * mib, isBackground: false, holdingIndexLock: true)
        #expect(state.head(id: probe.id, head, start: 0, last: mib - 1, total: 10 * mib, context: context).0 == .accepted)
        _ = state.bodyArrived(id: probe.id, count: Int(mib))
        _ = [UInt8]().withUnsafeBytes { bytes in
            state.bodyWritten(id: probe.id, range: 0..<mib, generation: 0, written: true, bytes: bytes, spillLimit: 0)
        }
        #expect(state.unsaved == [.ranges, .validators])
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(snapshot.ranges == [0..<mib] && snapshot.validator != nil && state.unsaved.isEmpty)
        state.commitFailed(validatorIncluded: true)
        #expect(state.unsaved == [.ranges, .validators])
    }
}
