/// The response head of a byte-range fetch, reduced to what the reader uses.
public struct FetchHead: Sendable {
    public var status: Int
    /// `Content-Range` of a 206: first byte, last byte (inclusive), total.
    public var rangeFirst: Int64?
    public var rangeLast: Int64?
    public var total: Int64?
    public var contentLength: Int64?
    public var etag: String?
    public var lastModified: String?
    /// The URL that answered, after redirects.
    public var effectiveURL: String

    public init(
        status: Int, rangeFirst: Int64?, rangeLast: Int64?, total: Int64?, contentLength: Int64?,
        etag: String?, lastModified: String?, effectiveURL: String
    ) {
        self.status = status
        self.rangeFirst = rangeFirst
        self.rangeLast = rangeLast
        self.total = total
        self.contentLength = contentLength
        self.etag = etag
        self.lastModified = lastModified
        self.effectiveURL = effectiveURL
    }
}

/// Why a fetch failed.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    /// Whether the same request may succeed if tried again.
    public var isTransient: Bool
    /// Whether the origin could not be reached at all (offline).
    public var isUnreachable: Bool
    public var message: String

    public init(isTransient: Bool, isUnreachable: Bool, message: String) {
        self.isTransient = isTransient
        self.isUnreachable = isUnreachable
        self.message = message
    }

    public var description: String { message }
}

/// Receives a streaming fetch; called on the network thread, in order.
public protocol FetchSink: AnyObject, Sendable {
    func receive(head: FetchHead) -> Bool
    /// The next bytes of the body, valid only during the call.
    func receive(body: UnsafeRawBufferPointer) -> Bool
    /// Every byte that arrived so far was passed to `receive(body:)`.
    func bodyBatchEnded()
    func complete(error: FetchError?)
}

/// Fetches byte ranges of episodes (the HTTP client implements it).
public protocol RangeSource: Sendable {
    /// Starts a GET of `range` with `If-Range: validator` when given.
    func fetch(url: String, range: Range<Int64>, validator: String?, sink: any FetchSink)
}

/// Fetches whole feed documents (the HTTP client implements it).
public protocol FeedSource: Sendable {
    /// The feed body; throws when it cannot be had now.
    func fetchFeed(url: String) throws(FetchError) -> [UInt8]
    /// A conditional GET (`If-None-Match`, `If-Modified-Since`) with gzip
    /// accepted; throws when the feed cannot be had now.
    func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse
}
