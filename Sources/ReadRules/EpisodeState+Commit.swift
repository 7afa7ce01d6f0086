public import RangeCache

/// The commit events: what of an episode the index hears of next, and the
/// order in which the flush makes it durable. The index never lists a byte
/// that is not durably on disk (guarantee 1 of docs/DESIGN.md): the ranges
/// are taken first, the scratch file is `fdatasync`ed, and only then are
/// the ranges committed, so the sync covers every byte of the snapshot.
extension EpisodeRules.State {
    // MARK: - Nested types

    /// What one episode brings to a commit.
    public struct CommitSnapshot: Sendable {
        public internal(set) var key: String
        /// The ranges to commit; `nil` when they did not change.
        public internal(set) var ranges: [Range<Int64>]?
        /// The length and validators to save, when they changed.
        public internal(set) var validator: EpisodeValidator?
        /// The file the ranges are in; `nil` when none was created.
        public internal(set) var scratch: EpisodeRules.FileToken?
        /// When it was last read (seconds since the epoch); 0: not in this
        /// mount (a check, a probe), so the index keeps its own.
        public internal(set) var lastRead: Int64
    }

    /// One step of a flush, in the order the flush takes them.
    public enum CommitEffect: Equatable, Sendable {
        /// `fdatasync` the scratch file of snapshot `index`; a failure
        /// leaves its ranges out of the commit.
        case sync(index: Int)
        /// Commit, in one transaction, the ranges of the snapshots whose
        /// sync succeeded, and every validator.
        case commit
        /// Note when snapshot `index` was last read (after the commit).
        case touch(index: Int)
    }

    // MARK: - Static methods

    /// The steps of a flush of `snapshots`: every sync before the commit
    /// that lists what it made durable. Ranges need their file synced; a
    /// snapshot that forgets every range needs no file (its sync is
    /// nothing), so the index forgets bytes whose file is gone.
    public static func commitPlan(_ snapshots: [CommitSnapshot]) -> [CommitEffect] {
        let synced = snapshots.indices.filter { index in
            guard let ranges = snapshots[index].ranges else { return false }
            return snapshots[index].scratch != nil || ranges.isEmpty
        }
        return synced.map { .sync(index: $0) } + [.commit]
            + synced.filter { snapshots[$0].lastRead > 0 }.map { .touch(index: $0) }
    }

    // MARK: - Events

    /// Takes what the next commit saves of this episode and marks it heard
    /// of; `commitFailed` undoes that.
    public mutating func takeCommitSnapshot(key: String) -> CommitSnapshot {
        noteIfFinal()
        var validator: EpisodeValidator?
        if unsaved.contains(.validators), let length {
            validator = EpisodeValidator(
                // A final episode whose link stopped working keeps it: the
                // next mount then knows the enclosure would only lead to
                // another variant (`finalLinkGone`).
                key: key, length: length, etag: etag, lastModified: lastModified,
                pinnedURL: effectiveURL ?? (isFinal ? finalURL : nil),
                pinnedIssuer: pinnedIssuer, isFinal: isFinal)
        }
        let ranges = unsaved.contains(.ranges) ? present.ranges : nil
        unsaved = []
        return CommitSnapshot(
            key: key, ranges: ranges, validator: validator, scratch: scratch, lastRead: lastRead)
    }

    /// The commit (or the sync of this episode) failed: the next flush
    /// tries again.
    public mutating func commitFailed(validatorIncluded: Bool) {
        unsaved.insert(.ranges)
        if validatorIncluded { unsaved.insert(.validators) }
    }
}
