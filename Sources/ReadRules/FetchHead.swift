import Feeds
import Foundation

/// The response head of a byte-range fetch, reduced to what the reader uses.
public struct FetchHead: Sendable {
    public var status: Int
    /// `Content-Range` of a 206: first byte, last byte (inclusive), total.
    public var rangeFirst: Int64?
    public var rangeLast: Int64?
    public var total: Int64?
    public var contentLength: Int64?
    public var etag: String?
    /// `Last-Modified` when it is a validator (`OriginVersion.validating`):
    /// `nil` beside a weak ETag, or when it is too close to the response's
    /// `Date` to be strong.
    public var lastModified: String?
    /// The URL that answered, after redirects.
    public var effectiveURL: String
    /// `Retry-After` as sent (seconds or an HTTP date), on a busy answer.
    public var retryAfter: String?
    /// Who sent podfs to `effectiveURL` (the address zone of the server
    /// that wrote it, as the HTTP layer spells it), kept with a pinned link
    /// so a later mount fetches it under the same zone rule (guarantee 6).
    public var issuer: String?
    /// How many redirects were followed to `effectiveURL`: with none, the
    /// time to this head was one round trip to its host
    /// (`LinkEstimates.observe(latency:feed:answered:direct:)`).
    public var redirects: Int

    public init(
        status: Int, rangeFirst: Int64?, rangeLast: Int64?, total: Int64?, contentLength: Int64?,
        etag: String?, lastModified: String?, effectiveURL: String, retryAfter: String? = nil,
        issuer: String? = nil, redirects: Int = 0
    ) {
        self.status = status
        self.rangeFirst = rangeFirst
        self.rangeLast = rangeLast
        self.total = total
        self.contentLength = contentLength
        self.etag = etag
        self.lastModified = lastModified
        self.effectiveURL = effectiveURL
        self.retryAfter = retryAfter
        self.issuer = issuer
        self.redirects = redirects
    }

    /// The longest wait a `Retry-After` may ask for: a day. A longer one
    /// is read as this, so later arithmetic on it stays small.
    public static let longestRetryDelay: Double = 86_400

    /// Seconds the origin asks to wait before asking again: `Retry-After`
    /// as delta-seconds (`1*DIGIT`: no sign, fraction or exponent) or as an
    /// HTTP date (`now`: seconds since the epoch). `nil` without the header
    /// or when it cannot be read; between 0 and `longestRetryDelay`.
    public static func retryDelay(retryAfter value: String?, now: Double) -> Double? {
        guard let value = value?.trimmingCharacters(in: CharacterSet(charactersIn: " \t")), !value.isEmpty
        else { return nil }
        if value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            // Past 6 digits the value is over a day whatever follows.
            guard value.utf8.count <= 6, let seconds = Double(value) else { return longestRetryDelay }
            return min(seconds, longestRetryDelay)
        }
        guard let date = FeedDate.parse(value), now.isFinite else { return nil }
        return min(max(0, Double(date) - now), longestRetryDelay)
    }
}

/// Why a fetch failed.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    /// Whether the same request may succeed if tried again.
    public var isTransient: Bool
    /// Whether the origin could not be reached at all (offline).
    public var isUnreachable: Bool
    public var message: String
    /// Seconds the origin asked to wait before trying again (`Retry-After`).
    public var retryAfter: Double?

    public init(isTransient: Bool, isUnreachable: Bool, message: String, retryAfter: Double? = nil) {
        self.isTransient = isTransient
        self.isUnreachable = isUnreachable
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { message }
}
