internal import CCurl

/// A proxy the user asked for (`-o proxy=URL`): the only one podfs uses.
///
/// libcurl would otherwise take a proxy from `http_proxy`, `https_proxy`
/// or `ALL_PROXY` (in either case) in the environment. podfs ignores those:
/// through a proxy, the address-zone rule sees only the proxy's address,
/// so an inherited variable would silently void the rule. With this option
/// the user chooses that, and the mount's log says what the rule then sees.
public struct HTTPProxy: Sendable, Equatable {
    // MARK: - Properties

    /// The schemes libcurl speaks to a proxy.
    public static let schemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// The proxy's URL, as given (libcurl gets it whole, credentials too).
    public let url: String
    /// The proxy's host as libcurl reads it (an IPv6 address in brackets).
    public let host: String
    /// `scheme://host:port` without any user name or password, for logs.
    public let shown: String

    // MARK: - Init

    /// Reads `-o proxy=URL`; `nil` unless it is a URL with one of
    /// `schemes` and a host that libcurl reads.
    public init?(_ url: String) {
        guard !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }),
            let scheme = url.firstRange(of: "://").map({ url[..<$0.lowerBound].lowercased() }),
            Self.schemes.contains(scheme), let host = AddressPolicy.host(of: url)
        else { return nil }
        self.url = url
        self.host = host
        let port = CurlURL.part(CURLUPART_PORT, of: url).map { ":" + $0 } ?? ""
        self.shown = "\(scheme)://\(host)\(port)"
    }

    // MARK: - Methods

    /// What the address-zone rule sees for every request: the proxy's
    /// address, described for the mount's log.
    public func whatTheZoneRuleSees(under policy: AddressPolicy) -> String {
        guard let address = IPAddress(numeric: host) else {
            return "the addresses \(host) resolves to"
        }
        return "\(address), \(policy.zone(of: address).phrase)"
    }
}
