internal import CCurl

/// The address-zone rule (docs/DESIGN.md, guarantee 6 and "Safety"): a
/// URL written by a server may only make podfs connect where that server
/// could send you anyway.
///
/// - A URL the user typed may go anywhere.
/// - Any URL may reach a public address.
/// - A URL from a server may reach its own zone: a feed served from a
///   private address (a home server) may use private addresses, one from a
///   link-local address link-local ones.
/// - A URL from a loopback server (something the user runs on this
///   machine) may also reach private and link-local addresses. A URL from
///   a private server may not reach loopback: a device on the LAN must not
///   make podfs talk to services that listen only on this machine.
/// - Unspecified, multicast and reserved addresses are never reached from a
///   server's URL.
/// - `allowPrivate` (`-o allow_private`) lifts the rule.
///
/// `HTTPClient` applies it at connect time, to the address libcurl is
/// about to connect to (literal or from DNS, rebinding included) and again
/// before each request (a reused connection), so neither a notation, a DNS
/// answer nor a redirect gets round it. Each hop of a redirect chain is
/// judged by the zone of the server that issued it; the rule is transitive,
/// so a chain never reaches what a direct hop could not. `check(url:from:)`
/// gives the same answer for literal URLs without a socket (unit tests, and
/// the zone of a feed URL that was not fetched). It reads the URL's host
/// with libcurl's own parser, so it judges the host libcurl connects to,
/// never a second reading of the URL.
public struct AddressPolicy: Sendable {
    // MARK: - Nested types

    /// What a literal URL's host says before any connection.
    public enum Verdict: Sendable, Equatable {
        /// The host is an address in an allowed zone.
        case allowed(AddressZone)
        /// The host is an address in a forbidden zone; the text says why.
        case refused(AddressZone, String)
        /// The host is a name: the answer is decided at connect time.
        case atConnect
        /// No host could be read from the URL.
        case unparsable
    }

    // MARK: - Properties

    /// `-o allow_private`: no zone rule at all.
    public var allowPrivate: Bool
    /// Addresses classified as public whatever they are. **Test only**: the
    /// integration tests cannot have a real public address inside their
    /// network namespace, so they name one private address they put on `lo`
    /// (`PODFS_TEST_TREAT_AS_PUBLIC`) to act as "the internet". The daemon
    /// logs a warning when this is set.
    public var treatedAsPublic: Set<IPAddress>

    // MARK: - Init

    public init(allowPrivate: Bool = false, treatedAsPublic: Set<IPAddress> = []) {
        self.allowPrivate = allowPrivate
        self.treatedAsPublic = treatedAsPublic
    }

    // MARK: - Methods

    /// The zone of an address under this policy.
    public func zone(of address: IPAddress) -> AddressZone {
        treatedAsPublic.contains(address) ? .global : AddressZone(address)
    }

    /// Whether a URL from `issuer` may make podfs connect to `target`.
    public func allows(_ target: AddressZone, from issuer: URLIssuer) -> Bool {
        if allowPrivate { return true }
        guard case .server(let source) = issuer else { return true }
        switch target {
        case .global: return true
        case .reserved: return false
        case .privateNetwork, .linkLocal: return source == target || source == .loopback
        case .loopback: return source == .loopback
        }
    }

    /// The decision for a connection to `address`, with the message a
    /// refusal carries.
    public func check(_ address: IPAddress, from issuer: URLIssuer) -> Verdict {
        let target = zone(of: address)
        guard allows(target, from: issuer) else {
            return .refused(target, refusal(address: "\(address)", zone: target, issuer: issuer))
        }
        return .allowed(target)
    }

    /// The decision for a URL whose host is an address literal in any
    /// notation libcurl reads; names are left to the connect-time check,
    /// and a URL libcurl refuses is `unparsable` (it connects nowhere).
    public func check(url: String, from issuer: URLIssuer) -> Verdict {
        guard let host = Self.host(of: url) else { return .unparsable }
        guard let address = IPAddress(numeric: host) else { return .atConnect }
        return check(address, from: issuer)
    }

    /// The host libcurl connects to for `url`, as libcurl's URL parser
    /// reads it (`curl_url_get(CURLUPART_HOST)`): percent-decoded, an IPv4
    /// literal in any notation turned into a dotted quad, IPv6 in brackets
    /// without its zone, one trailing dot dropped (libcurl drops it before
    /// resolving). `nil` when libcurl refuses the URL.
    public static func host(of url: String) -> String? {
        guard var host = CurlURL.part(CURLUPART_HOST, of: url) else { return nil }
        if host.hasSuffix("."), host.count > 1, !host.hasPrefix("[") { host.removeLast() }
        return host.isEmpty ? nil : host
    }

    // MARK: - Private methods

    private func refusal(address: String, zone: AddressZone, issuer: URLIssuer) -> String {
        let reachable = [AddressZone.global, .privateNetwork, .linkLocal, .loopback]
            .filter { allows($0, from: issuer) }.map(\.adjective)
        let list = reachable.count == 1 ? reachable[0] : reachable.dropLast().joined(separator: ", ") + " and " + reachable.last!
        return "podfs refuses to connect to \(address), \(zone.phrase), for a URL from \(issuer): such URLs may only "
            + "lead to \(list) addresses (README, Safety). If you trust this feed, mount with -o allow_private"
    }
}
