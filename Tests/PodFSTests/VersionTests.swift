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

    @Test func aFailedCommitKeepsBothKindsOfNewsForTheNextFlush() {
        var state = Episode.State()
        state.current = .restored(length: 10 * mib)
        _ = state.current.wrote(0..<mib)
        state.unsaved = [.ranges, .validators]
        let snapshot = state.takeCommitSnapshot(key: "k")
        #expect(snapshot.ranges == [0..<mib] && snapshot.validator != nil && state.unsaved.isEmpty)
        state.commitFailed(validatorIncluded: true)
        #expect(state.unsaved == [.ranges, .validators])
    }
}
