/// One GET (a whole resource or a byte range of it), or one POST of a small
/// body.
public struct HTTPRequest: Sendable {
    /// An absolute http or https URL; other schemes are refused by libcurl.
    public var url: String
    /// The bytes asked for (half-open); `nil` asks for the whole resource.
    public var range: Range<Int64>?
    /// The validator to send as `If-Range` (an ETag or an HTTP date).
    public var ifRange: String?
    /// Extra request headers, e.g. `If-None-Match` for a conditional feed GET.
    public var headers: [(name: String, value: String)]
    /// Ask for gzip/deflate bodies (feeds); never for byte ranges.
    public var acceptCompressed: Bool
    /// Who wrote `url`: decides which address zones it may reach (see
    /// `AddressPolicy`). The user's own URLs (feed SOURCEs) may go anywhere.
    public var issuer: URLIssuer
    /// The bytes to send as a POST (its `Content-Type` goes in `headers`);
    /// `nil` sends a GET. libcurl keeps its own copy, and a redirect
    /// (301, 302, 303) turns it into a GET, as browsers do.
    public var body: [UInt8]?
    /// Who to log in as (HTTP Basic). libcurl sends them only to the host
    /// of `url`, never to a host a redirect leads to.
    public var credentials: HTTPCredentials?
    /// Seconds to wait for a connection.
    public var connectTimeout: Int
    /// Seconds the whole transfer may take; `nil`: no limit (a body that
    /// stalls still fails, by the low-speed rule).
    public var totalTimeout: Int?
    /// Seconds without a byte (waiting for the head included, connecting
    /// not) before the transfer fails; `nil`: the client's 30 s. The lower
    /// of the two applies.
    public var stallTimeout: Int?

    public init(
        url: String, range: Range<Int64>? = nil, ifRange: String? = nil,
        headers: [(name: String, value: String)] = [], acceptCompressed: Bool = false, issuer: URLIssuer = .user,
        body: [UInt8]? = nil, credentials: HTTPCredentials? = nil, connectTimeout: Int = 15,
        totalTimeout: Int? = nil, stallTimeout: Int? = nil
    ) {
        self.stallTimeout = stallTimeout
        self.body = body
        self.credentials = credentials
        self.issuer = issuer
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.url = url
        self.range = range
        self.ifRange = ifRange
        self.headers = headers
        self.acceptCompressed = acceptCompressed
    }
}
