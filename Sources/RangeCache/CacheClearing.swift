/// What `CacheMaintenance.clear(keys:)` did.
public struct CacheClearing: Sendable {
    /// Episodes whose cached ranges were forgotten.
    public var episodes = 0
    /// Bytes the index listed for them.
    public var forgottenBytes: Int64 = 0
    /// Scratch files deleted, and the space they took on disk.
    public var files = 0
    public var freedBytes: Int64 = 0

    public init() {}
}
