/// The address-zone rule (DESIGN.md, guarantee 6): a URL written by a
/// server may only make podfs connect where that server could send you
/// anyway.
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
/// the zone of a feed URL that was not fetched).
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
    /// notation; names are left to the connect-time check.
    public func check(url: String, from issuer: URLIssuer) -> Verdict {
        guard let host = Self.host(of: url) else { return .unparsable }
        guard let address = IPAddress(host: host) else { return .atConnect }
        let target = zone(of: address)
        guard allows(target, from: issuer) else {
            let shown = host == "\(address)" ? host : "\(host) (\(address))"
            return .refused(target, refusal(address: shown, zone: target, issuer: issuer))
        }
        return .allowed(target)
    }

    /// The host part of an absolute URL, percent-decoded, brackets kept for
    /// IPv6; `nil` when there is none.
    public static func host(of url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let rest = url[schemeEnd.upperBound...]
        // WHATWG and libcurl both end the authority at `\` too.
        let authority = rest.prefix { !"/?#\\".contains($0) }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        var host: Substring
        if hostAndPort.first == "[" {
            guard let close = hostAndPort.firstIndex(of: "]") else { return nil }
            host = hostAndPort[...close]
        } else {
            host = hostAndPort.prefix { $0 != ":" }
        }
        guard !host.isEmpty else { return nil }
        if host.contains("%"), host.first != "[" { host = Substring(percentDecoded(host)) }
        return String(host)
    }

    // MARK: - Private methods

    private func refusal(address: String, zone: AddressZone, issuer: URLIssuer) -> String {
        let reachable = [AddressZone.global, .privateNetwork, .linkLocal, .loopback]
            .filter { allows($0, from: issuer) }.map(\.adjective)
        let list = reachable.count == 1 ? reachable[0] : reachable.dropLast().joined(separator: ", ") + " and " + reachable.last!
        return "podfs refuses to connect to \(address), \(zone.phrase), for a URL from \(issuer): such URLs may only "
            + "lead to \(list) addresses (README, Safety). If you trust this feed, mount with -o allow_private"
    }

    private static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
