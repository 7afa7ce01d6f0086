/// What `CacheMaintenance.verify()` checked and found.
public struct CacheVerification: Sendable {
    /// Episodes in the index.
    public var episodes = 0
    /// Files found in `data/`.
    public var files = 0
    /// Bytes the index listed before the check.
    public var listedBytes: Int64 = 0
    /// Bytes the index lists after the repairs: all checked.
    public var vouchedBytes: Int64 = 0
    /// Bytes of orphan files deleted (their sizes on disk).
    public var deletedFileBytes: Int64 = 0
    public var findings: [CacheFinding] = []

    public init() {}
}
