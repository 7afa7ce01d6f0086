public import ReadRules
/// Receives a streaming fetch; called on the network thread, in order.
public protocol FetchSink: AnyObject, Sendable {
    func receive(head: FetchHead) -> Bool
    /// The next bytes of the body, valid only during the call.
    func receive(body: UnsafeRawBufferPointer) -> Bool
    /// Every byte that arrived so far was passed to `receive(body:)`.
    func bodyBatchEnded()
    func complete(error: FetchError?)
}

/// Who listed a URL the reader fetches: the episode's URL as its feed
/// gave it, and that feed's URL. A URL is fetched under the address zone
/// of the feed that listed it; a URL the episode was sent to (a pinned
/// redirect) is not the listed one, and keeps the zone of the server
/// that redirected there.
public struct ListedBy: Sendable, Equatable {
    public let url: String
    public let feedURL: String

    public init(url: String, feedURL: String) {
        self.url = url
        self.feedURL = feedURL
    }
}

/// Fetches byte ranges of episodes (the HTTP client implements it).
public protocol RangeSource: Sendable {
    /// Starts a GET of `range` with `If-Range: validator` when given.
    func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink)
    /// Starts a GET as `fetch` does and returns how to stop it early (its
    /// sink then hears `complete` with an error), or `nil` when it cannot
    /// be stopped before its next bytes arrive.
    func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink
    ) -> FetchStopper?
    /// Starts a GET as `start` does, which fails once `seconds` passed
    /// without a byte (its head's included), whatever it received before
    /// (a size check's: its head tells the size, and a host that holds the
    /// byte back must not hold a connection for the usual 30 s).
    func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink,
        stalledAfter seconds: Int
    ) -> FetchStopper?
}

/// Stops a transfer on its way (`RangeSource.start`).
public typealias FetchStopper = @Sendable () -> Void

extension RangeSource {
    public func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink
    ) -> FetchStopper? {
        fetch(url: url, range: range, validator: validator, listedBy: listedBy, sink: sink)
        return nil
    }

    /// The usual limit: for sources that answer at once (tests).
    public func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink,
        stalledAfter seconds: Int
    ) -> FetchStopper? {
        start(url: url, range: range, validator: validator, listedBy: listedBy, sink: sink)
    }
}
