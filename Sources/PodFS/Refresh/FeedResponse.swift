public import ReadRules
/// What a conditional GET of a feed sends: the validators of the copy kept.
public struct FeedValidators: Sendable, Equatable {
    /// Sent as `If-None-Match`.
    public var etag: String?
    /// Sent as `If-Modified-Since`.
    public var lastModified: String?

    public init(etag: String?, lastModified: String?) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Whether there is anything to send.
    public var isEmpty: Bool { etag == nil && lastModified == nil }
}

/// The answer to a (conditional) feed GET.
public enum FeedResponse: Sendable, Equatable {
    /// A body, with the validators to send next time.
    case body([UInt8], etag: String?, lastModified: String?)
    /// `304 Not Modified`: the kept copy is current.
    case notModified
}

/// A feed GET's answer and where the feed moved for good, if it did.
public struct FeedAnswer: Sendable, Equatable {
    public var response: FeedResponse
    /// The URL reached through permanent redirects only (301, 308); `nil`
    /// without a redirect or with a temporary one (302, 307) on the way.
    public var movedTo: String?

    public init(response: FeedResponse, movedTo: String? = nil) {
        self.response = response
        self.movedTo = movedTo
    }
}

extension FeedSource {
    /// A source that cannot tell moves never reports one.
    public func fetchFeed(url: String, validators: FeedValidators?, subscribedAs: String) throws(FetchError) -> FeedAnswer {
        FeedAnswer(response: try fetchFeed(url: url, validators: validators))
    }

    /// A source that cannot ask conditionally always gets the whole body.
    public func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
        .body(try fetchFeed(url: url), etag: nil, lastModified: nil)
    }
}
