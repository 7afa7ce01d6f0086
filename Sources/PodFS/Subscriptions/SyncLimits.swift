/// The bounds a sync server's answer is held to. An answer outside them is
/// refused whole, never applied in part.
public struct SyncLimits: Sendable, Equatable {
    /// The most entries one list of an answer (`add`, `remove`,
    /// `update_urls`) may have.
    public var maxEntries: Int
    /// The most subscriptions a pulled answer may leave the list with.
    public var maxSubscriptions: Int
    /// The longest URL taken, in UTF-8 bytes; a longer one is skipped.
    public var maxURLBytes: Int
    /// The largest timestamp taken: 9999-12-31T23:59:59Z in Unix seconds.
    /// A larger one is no clock's reading, and would not survive storage.
    public var maxTimestamp: Int64

    public init(
        maxEntries: Int = 5_000, maxSubscriptions: Int = 5_000, maxURLBytes: Int = 4_096,
        maxTimestamp: Int64 = 253_402_300_799
    ) {
        self.maxEntries = maxEntries
        self.maxSubscriptions = maxSubscriptions
        self.maxURLBytes = maxURLBytes
        self.maxTimestamp = maxTimestamp
    }
}
