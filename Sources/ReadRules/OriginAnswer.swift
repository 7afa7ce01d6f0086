import Feeds

/// What an origin's answer to a request means: the one rule for episodes
/// and feeds alike, so a status the episode path retries is retried for a
/// feed too.
///
/// Pure: a status, a `Retry-After` as sent and the clock in; a verdict out.
/// The value read from `Retry-After` is bounded where it is parsed
/// (`FetchHead.retryDelay`, guarantee 7 of docs/DESIGN.md).
public enum OriginAnswer: Sendable, Equatable {
    /// A 2xx: the body is the answer (what a 200 or a 206 means for the
    /// bytes is the caller's to decide).
    case usable
    /// A 304 to a conditional request: what the caller holds is current.
    case notModified
    /// The origin is busy or briefly broken (408, 429, 5xx): the same
    /// request may succeed later, after `retryAfter` seconds when it said.
    case transient(retryAfter: Double?)
    /// Anything else (403, 404, 410, a redirect that was not followed):
    /// asking again will not help.
    case final

    // MARK: - Init

    /// Classifies `status`; `retryAfter` is the header as sent, `now` the
    /// wall clock in seconds since the epoch (for an HTTP date).
    public init(status: Int, retryAfter: String?, now: Double) {
        switch status {
        case 200..<300: self = .usable
        case 304: self = .notModified
        case 408, 429, 500..<600:
            self = .transient(retryAfter: FetchHead.retryDelay(retryAfter: retryAfter, now: now))
        default: self = .final
        }
    }

    // MARK: - Methods

    /// Whether asking again may succeed.
    public var isTransient: Bool {
        if case .transient = self { return true }
        return false
    }

    /// Seconds the origin asked to wait before asking again, if it said.
    public var retryAfter: Double? {
        if case .transient(let delay) = self { return delay }
        return nil
    }

    /// The failure to report for an answer with `status` from `url` that
    /// the caller cannot use; the URL is shown without its secrets.
    public func failure(status: Int, url: String) -> FetchError {
        FetchError(
            isTransient: isTransient, isUnreachable: false,
            message: "the origin answered HTTP \(status) for \(FeedURL.redacted(url, for: .log))",
            retryAfter: retryAfter)
    }
}

/// What identifies one version of an episode's bytes at its origin: its
/// length and its validators. Two answers with different ones are two
/// versions (guarantee 3 of docs/DESIGN.md).
public struct OriginVersion: Sendable, Equatable {
    public var length: Int64?
    public var etag: String?
    public var lastModified: String?

    public init(length: Int64?, etag: String?, lastModified: String?) {
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
    }

    /// How much older than the response's `Date` a `Last-Modified` must be
    /// to be a strong validator (RFC 9110, 8.8.2.2): a file changed within
    /// the same second could have been changed twice.
    public static let strongDateMargin: Int64 = 60

    /// Whether `etag` is strong: a weak one (`W/"…"`) says two
    /// representations are equivalent, not that their bytes are the same.
    public static func isStrong(etag: String) -> Bool {
        !etag.hasPrefix("W/")
    }

    /// The `Last-Modified` of a response as a validator that can tell its
    /// bytes, or `nil` (RFC 9110, 8.8.2.2 and 13.1.5):
    /// - beside a strong ETag, as sent (the ETag is the validator);
    /// - beside a weak ETag, never: the origin says its bytes may differ,
    ///   and a client with an ETag may not send a date in `If-Range`;
    /// - alone, when it is at least `strongDateMargin` older than the
    ///   response's `Date`, or, without a readable `Date`, than `receivedAt`
    ///   (seconds since the epoch, when the head came): a date closer than
    ///   that, or in the future, may name two versions.
    public static func validating(
        lastModified: String?, etag: String?, date: String?, receivedAt: Double
    ) -> String? {
        guard let lastModified else { return nil }
        if let etag { return isStrong(etag: etag) ? lastModified : nil }
        guard let modified = FeedDate.parse(lastModified) else { return nil }
        let stamped = date.flatMap(FeedDate.parse) ?? (receivedAt.isFinite ? Int64(receivedAt) : nil)
        guard let stamped, modified <= stamped - strongDateMargin else { return nil }
        return lastModified
    }

    /// The validator a range request sends in `If-Range`: a strong ETag,
    /// else, with no ETag at all, Last-Modified (a weak ETag may not be
    /// used there, nor a date by a client that has an ETag).
    public var ifRange: String? {
        if let etag { return Self.isStrong(etag: etag) ? etag : nil }
        return lastModified
    }

    /// Whether this version can be proven: a later response with the same
    /// validator is the same bytes. A strong ETag proves it, or, with no
    /// ETag, a Last-Modified (kept only when strong, `validating`). A weak
    /// ETag proves nothing, whatever comes with it.
    public var isProvable: Bool {
        if let etag { return Self.isStrong(etag: etag) }
        return lastModified != nil
    }

    /// Whether `answer` shows different bytes than this version: a changed
    /// length, or a changed validator of the kind this version has. Nothing
    /// known yet is no change.
    public func isReplaced(by answer: OriginVersion) -> Bool {
        guard length != nil || etag != nil || lastModified != nil else { return false }
        if let old = length, let new = answer.length, old != new { return true }
        if let old = etag, let new = answer.etag { return old != new }
        if etag == nil, let old = lastModified, let new = answer.lastModified { return old != new }
        return false
    }
}
