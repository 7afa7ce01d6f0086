/// The status and headers of the final response of a request (after
/// redirects), with the fields podfs reads parsed out.
///
/// Every number read from a header is checked here, where it enters: a
/// length or byte position is plain decimal digits (no sign, no exponent, no
/// `0x`) no larger than `largestPosition`, else the field counts as absent.
/// So arithmetic on what these accessors return cannot overflow.
public struct HTTPResponseHead: Sendable {
    /// The byte positions of a `206` body and the resource's full length.
    public struct ContentRange: Sendable, Equatable {
        /// First byte position of the body.
        public var first: Int64
        /// Last byte position of the body (inclusive, as in the header).
        public var last: Int64
        /// The total length of the resource, `nil` for `*`.
        public var total: Int64?
    }

    /// The largest length or byte position read from a header: 1 TiB. An
    /// episode is never that large; a larger number is a broken or hostile
    /// origin, and the field is treated as malformed.
    public static let largestPosition: Int64 = 1 << 40

    /// The HTTP status code of the final response.
    public var status: Int
    /// Header fields of the final response, names lowercased, in order.
    public var headers: [(name: String, value: String)]
    /// The URL that answered, after redirects.
    public var effectiveURL: String
    /// The zone of the address that answered (`nil` when unknown): a
    /// feed's zone, which decides where its enclosures may lead.
    public var connectedZone: AddressZone?
    /// Who wrote `effectiveURL`: the request's issuer, or the server that
    /// redirected to it. A later direct request for `effectiveURL` carries
    /// this issuer, so remembering a redirect never widens what it reaches.
    public var issuer: URLIssuer
    /// The statuses of the redirects followed to `effectiveURL`, in order.
    public var redirectStatuses: [Int] = []

    /// Where the resource now lives for good: `effectiveURL` when every
    /// redirect on the way was permanent (301, 308); `nil` with no
    /// redirect or with a temporary one (302, 303, 307) on the way.
    public var permanentURL: String? {
        guard !redirectStatuses.isEmpty, redirectStatuses.allSatisfy({ $0 == 301 || $0 == 308 }) else { return nil }
        return effectiveURL
    }

    public init(
        status: Int, headers: [(name: String, value: String)], effectiveURL: String,
        connectedZone: AddressZone? = nil, issuer: URLIssuer = .user
    ) {
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
        self.connectedZone = connectedZone
        self.issuer = issuer
    }

    /// The value of the last header with this (case-insensitive) name.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.last(where: { $0.name == wanted })?.value
    }

    public var etag: String? { header("etag") }

    public var lastModified: String? { header("last-modified") }

    /// `Content-Length`: `nil` when absent, malformed or above
    /// `largestPosition`.
    public var contentLength: Int64? {
        header("content-length").flatMap { Self.decimal($0.trimmingCharacters(in: " \t")) }
    }

    /// `Content-Range: bytes a-b/total` (or `bytes */total` on a 416).
    public var contentRange: ContentRange? {
        guard let value = header("content-range") else { return nil }
        return Self.parseContentRange(value)
    }

    /// Parses `bytes a-b/total`, `bytes a-b/*` and `bytes */total`; anything
    /// malformed or inconsistent (b < a, b >= total, a number above
    /// `largestPosition`) is `nil`.
    public static func parseContentRange(_ value: String) -> ContentRange? {
        let trimmed = value.trimmingCharacters(in: " \t")
        // The range unit is case-insensitive and followed by one space
        // (RFC 9110, 14.4).
        guard trimmed.utf8.count > 6, trimmed.prefix(6).lowercased() == "bytes " else { return nil }
        let spec = trimmed.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let total: Int64?
        if parts[1] == "*" {
            total = nil
        } else {
            guard let t = decimal(parts[1]) else { return nil }
            total = t
        }
        if parts[0] == "*" {
            guard let total else { return nil }
            return ContentRange(first: -1, last: -1, total: total)
        }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = decimal(bounds[0]), let last = decimal(bounds[1]), last >= first
        else { return nil }
        if let total, last >= total { return nil }
        return ContentRange(first: first, last: last, total: total)
    }

    /// The status code of a status line (`HTTP/1.1 302 Found`, `HTTP/2 200`):
    /// exactly three digits after the version, else `nil`.
    public static func status(ofStatusLine line: String) -> Int? {
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/"), fields[1].utf8.count == 3,
            let code = decimal(fields[1])
        else { return nil }
        return Int(code)
    }

    /// A length or position as HTTP writes it (`1*DIGIT`), from 0 to
    /// `largestPosition`; anything else (a sign, white space, an exponent,
    /// hex, too many digits) is `nil`.
    public static func decimal<S: StringProtocol>(_ text: S) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            // value <= largestPosition here, so this cannot overflow.
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            guard value <= largestPosition else { return nil }
        }
        return value
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let c = s.first, chars.contains(c) { s = s.dropFirst() }
        while let c = s.last, chars.contains(c) { s = s.dropLast() }
        return String(s)
    }
}
