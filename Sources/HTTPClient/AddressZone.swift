/// Where an address leads, as far as the address-zone rule (docs/DESIGN.md,
/// "Safety") cares: the public internet, a private network, a link, this
/// machine, or nowhere a podcast lives.
public enum AddressZone: String, Sendable, Hashable, CaseIterable {
    /// Publicly routed unicast: any feed may make podfs connect here.
    case global
    /// RFC 1918 (10/8, 172.16/12, 192.168/16), IPv6 unique-local (fc00::/7)
    /// and deprecated site-local (fec0::/10), and shared address space
    /// (100.64/10: carrier-grade NAT, and the range Tailscale-style overlay
    /// networks hand out, which is why it counts as private: a home server
    /// reached that way keeps working).
    case privateNetwork
    /// 169.254/16 and fe80::/10: where cloud metadata services live.
    case linkLocal
    /// 127/8 and ::1: this machine.
    case loopback
    /// Unspecified (0/8, ::, which Linux connects to this machine),
    /// multicast, broadcast, documentation, benchmarking and other reserved
    /// space: never a podcast's origin.
    case reserved

    // MARK: - Classification

    /// The zone of an address; IPv4 carried inside IPv6 (mapped `::ffff:0:0/96`,
    /// compatible `::/96`, SIIT `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96` and
    /// `64:ff9b:1::/48`, 6to4 `2002::/16`) is classified by that IPv4 address,
    /// since that is where the packets go.
    public init(_ address: IPAddress) {
        switch address {
        case .v4(let value): self = AddressZone.classifyV4(value)
        case .v6(let bytes): self = AddressZone.classifyV6(bytes)
        }
    }

    /// How log lines and errors name the zone.
    public var phrase: String {
        self == .reserved ? "an unspecified, multicast or reserved address" : "a \(adjective) address"
    }

    /// `public`, `private`, `link-local`, `loopback` or `reserved`.
    public var adjective: String {
        switch self {
        case .global: return "public"
        case .privateNetwork: return "private"
        case .linkLocal: return "link-local"
        case .loopback: return "loopback"
        case .reserved: return "reserved"
        }
    }

    // MARK: - Private methods

    private static func classifyV4(_ a: UInt32) -> AddressZone {
        func within(_ prefix: UInt32, _ length: UInt32) -> Bool {
            length == 0 || a >> (32 - length) == prefix >> (32 - length)
        }
        if within(0x7F00_0000, 8) { return .loopback }
        if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return .privateNetwork }
        if within(0x6440_0000, 10) { return .privateNetwork }
        if within(0xA9FE_0000, 16) { return .linkLocal }
        if within(0x0000_0000, 8) { return .reserved }  // "this network", 0.0.0.0
        if within(0xE000_0000, 4) || within(0xF000_0000, 4) { return .reserved }  // multicast, 240/4, broadcast
        if within(0xC000_0000, 24) || within(0xC000_0200, 24) || within(0xC633_6400, 24)
            || within(0xCB00_7100, 24) || within(0xC612_0000, 15)
        {
            return .reserved  // IETF protocol assignments, documentation, benchmarking
        }
        return .global
    }

    private static func classifyV6(_ b: [UInt8]) -> AddressZone {
        func zeros(_ range: Range<Int>) -> Bool { b[range].allSatisfy { $0 == 0 } }
        func v4(at offset: Int) -> UInt32 { b[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        if zeros(0..<15) {
            return b[15] == 1 ? .loopback : b[15] == 0 ? .reserved : classifyV4(v4(at: 12))
        }
        // IPv4-compatible (::a.b.c.d, deprecated but still routed by some stacks).
        if zeros(0..<12) { return classifyV4(v4(at: 12)) }
        // IPv4-mapped ::ffff:a.b.c.d and SIIT ::ffff:0:a.b.c.d.
        if zeros(0..<10), b[10] == 0xFF, b[11] == 0xFF { return classifyV4(v4(at: 12)) }
        if zeros(0..<8), b[8] == 0xFF, b[9] == 0xFF, b[10] == 0, b[11] == 0 { return classifyV4(v4(at: 12)) }
        // NAT64 well-known prefix: the gateway connects to the IPv4 inside.
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, zeros(4..<12) { return classifyV4(v4(at: 12)) }
        // Local-use NAT64 (RFC 8215): at least private.
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B, b[4] == 0x00, b[5] == 0x01 {
            let inner = classifyV4(v4(at: 12))
            return inner == .global ? .privateNetwork : inner
        }
        // 6to4: the relay delivers to the embedded IPv4.
        if b[0] == 0x20, b[1] == 0x02 {
            let inner = classifyV4(v4(at: 2))
            return inner == .global ? .global : inner
        }
        if b[0] & 0xFE == 0xFC { return .privateNetwork }  // fc00::/7
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return .linkLocal }  // fe80::/10
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return .privateNetwork }  // fec0::/10
        if b[0] == 0xFF { return .reserved }  // multicast
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return .reserved }  // documentation
        if b[0] & 0xE0 == 0x20 { return .global }  // 2000::/3, global unicast
        return .reserved
    }
}
