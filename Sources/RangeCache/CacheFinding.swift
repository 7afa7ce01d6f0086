/// One problem `podfs cache verify` found, and what it did about it.
public struct CacheFinding: Sendable, Equatable {
    // MARK: - Nested types

    /// What was wrong.
    public enum Kind: String, Sendable, Equatable {
        /// The index file was damaged; it was set aside and a new one made.
        case damagedIndex
        /// Ranges are listed for an episode whose length was never recorded.
        case rangesWithoutLength
        /// A listed range reaches outside the episode's length.
        case rangeOutsideEpisode
        /// Ranges are listed but the scratch file is gone.
        case missingFile
        /// The scratch file's length differs from the episode's.
        case wrongFileLength
        /// Listed bytes are holes in the scratch file (never written there).
        case holeInListedRange
        /// The scratch file could not be opened or inspected.
        case unreadableFile
        /// A file in `data/` that no episode in the index owns.
        case orphanFile
    }

    // MARK: - Public properties

    public let kind: Kind
    /// The episode's key (the scratch file's name), or the orphan's name.
    public let key: String
    /// What was found, as a sentence fragment ("the cache file is missing").
    public let problem: String
    /// What was done ("forgot its 3.0 MiB of cached ranges").
    public let repair: String
    /// Bytes the index listed before and no longer lists.
    public let forgottenBytes: Int64

    // MARK: - Init

    public init(kind: Kind, key: String, problem: String, repair: String, forgottenBytes: Int64 = 0) {
        self.kind = kind
        self.key = key
        self.problem = problem
        self.repair = repair
        self.forgottenBytes = forgottenBytes
    }
}
