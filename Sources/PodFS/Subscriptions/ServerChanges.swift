/// What a sync server says changed since a timestamp, checked: every URL an
/// http(s) feed URL in podfs's spelling (`SourceList.feedURL`), each list
/// without duplicates, the timestamp a plausible clock reading.
///
/// Made only by `SyncAnswer.changes(_:limits:)` (or a test), so the rules
/// never see an unchecked answer.
public struct ServerChanges: Sendable, Equatable {
    /// Feeds subscribed elsewhere, in the server's order.
    public var add: [String]
    /// Feeds unsubscribed elsewhere, in the server's order.
    public var remove: [String]
    /// The server's clock: the `since` of the next pull.
    public var timestamp: Int64
    /// Entries dropped because they are no http(s) URL or too long.
    public var skipped: Int
    /// The server's own spelling of a URL of `add` or `remove` where it
    /// differs from podfs's (`feed://`, a raw `ä`): a removal must reach
    /// a server that matches URLs as written (Nextcloud) in that spelling.
    public var spellings: [String: String]

    public init(
        add: [String], remove: [String], timestamp: Int64, skipped: Int = 0, spellings: [String: String] = [:]
    ) {
        self.add = add
        self.remove = remove
        self.timestamp = timestamp
        self.skipped = skipped
        self.spellings = spellings
    }
}

/// What a sync server answers to a push, checked like `ServerChanges`.
public struct PushReceipt: Sendable, Equatable {
    /// A URL the server stores under another spelling (gpodder.net cleans
    /// URLs up): the list should use the new one.
    public struct Rename: Sendable, Equatable {
        public var from: String
        public var to: String

        public init(from: String, to: String) {
            self.from = from
            self.to = to
        }
    }

    /// The server's clock after the push, when it gave one.
    public var timestamp: Int64?
    /// `update_urls`, both sides valid and different.
    public var renames: [Rename]

    public init(timestamp: Int64?, renames: [Rename] = []) {
        self.timestamp = timestamp
        self.renames = renames
    }
}
