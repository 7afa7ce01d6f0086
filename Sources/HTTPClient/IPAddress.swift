import Glibc

/// An IPv4 or IPv6 address, read only in the strict numeric forms
/// `inet_pton` takes, so the address-zone rule classifies exactly the
/// address a connection reaches.
///
/// No loose notation (`127.1`, `0x7f000001`, `0177.0.0.1`) is read here:
/// a URL's host comes from libcurl's own parser, which turns those into a
/// dotted quad first (`AddressPolicy.host(of:)`), and libcurl's connected
/// address is numeric text. Pure: no resolver, no socket.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    // MARK: - Parsing

    /// The address `text` writes as `inet_pton` reads it: a dotted quad,
    /// or IPv6 text, bracketed or not, with an optional `%zone` (dropped).
    /// `nil` for a name or any other notation.
    public init?(numeric text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: v4) { Array($0) })
            return
        }
        var host = Substring(text)
        if host.first == "[", host.last == "]" { host = host.dropFirst().dropLast() }
        if let percent = host.firstIndex(of: "%") { host = host[..<percent] }
        var v6 = in6_addr()
        guard host.contains(":"), inet_pton(AF_INET6, String(host), &v6) == 1 else { return nil }
        self.init(bytes: withUnsafeBytes(of: v6) { Array($0) })
    }

    /// An address from raw network-order bytes (4 or 16 of them).
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16: self = .v6(bytes)
        default: return nil
        }
    }

    // MARK: - Properties

    /// The address as `inet_ntop` writes it: a dotted quad, or IPv6 text
    /// (lowercase, the longest run of zero groups as `::`, IPv4-mapped as
    /// `::ffff:a.b.c.d`).
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch self {
        case .v4(let value):
            var address = in_addr(s_addr: value.bigEndian)
            inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
        case .v6(let bytes):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
        }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
