/// The status and headers of the final response of a request (after
/// redirects), with the fields podfs reads parsed out.
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

    public var contentLength: Int64? { header("content-length").flatMap { Int64($0) } }

    /// `Content-Range: bytes a-b/total` (or `bytes */total` on a 416).
    public var contentRange: ContentRange? {
        guard let value = header("content-range") else { return nil }
        return Self.parseContentRange(value)
    }

    /// Parses `bytes a-b/total`, `bytes a-b/*` and `bytes */total`; anything
    /// malformed or inconsistent (b < a, b >= total) is `nil`.
    public static func parseContentRange(_ value: String) -> ContentRange? {
        let trimmed = value.trimmingCharacters(in: " \t")
        guard trimmed.lowercased().hasPrefix("bytes") else { return nil }
        let spec = trimmed.dropFirst(5).trimmingCharacters(in: " \t")
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let total: Int64?
        if parts[1] == "*" {
            total = nil
        } else {
            guard let t = Int64(parts[1]), t >= 0 else { return nil }
            total = t
        }
        if parts[0] == "*" {
            guard let total else { return nil }
            return ContentRange(first: -1, last: -1, total: total)
        }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
            first >= 0, last >= first
        else { return nil }
        if let total, last >= total { return nil }
        return ContentRange(first: first, last: last, total: total)
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
