/// An IPv4 or IPv6 address parsed from any notation a URL host or a socket
/// can carry it in, so the address-zone policy classifies what a connection
/// would really reach, not what the text looks like.
///
/// IPv4 hosts are read the way `inet_aton`, browsers (WHATWG URL) and
/// libcurl read them: one to four parts separated by dots, each decimal,
/// octal (a leading `0`) or hexadecimal (`0x`), the last part filling the
/// remaining bytes. So `2130706433`, `0x7f000001`, `0x7f.0.0.1`,
/// `0177.0.0.1` and `127.1` are all `127.0.0.1`. A single trailing dot is
/// allowed (`127.0.0.1.`). IPv6 literals may be bracketed, compressed
/// (`::`), end in dotted IPv4 (`::ffff:127.0.0.1`) and carry a zone id
/// (`fe80::1%25eth0`). Pure: no resolver, no socket.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    // MARK: - Parsing

    /// The address a URL host (or a numeric string from a socket) denotes,
    /// or `nil` when it is a name for the resolver.
    public init?(host text: String) {
        var host = Substring(text)
        if host.first == "[", host.last == "]" {
            host = host.dropFirst().dropLast()
            guard let bytes = IPAddress.parseV6(host) else { return nil }
            self = .v6(bytes)
            return
        }
        if host.contains(":") {
            guard let bytes = IPAddress.parseV6(host) else { return nil }
            self = .v6(bytes)
            return
        }
        guard let value = IPAddress.parseV4(host) else { return nil }
        self = .v4(value)
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

    /// Dotted quad, or IPv6 text in the RFC 5952 form (lowercase, the
    /// longest run of zero groups as `::`, IPv4-mapped as `::ffff:a.b.c.d`).
    public var description: String {
        switch self {
        case .v4(let value):
            return IPAddress.dotted(value)
        case .v6(let bytes):
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return "::ffff:" + IPAddress.dotted(bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) })
            }
            let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
            // The longest run of two or more zero groups (the first of equals).
            var best: Range<Int>? = nil
            var start: Int? = nil
            for index in 0...8 {
                if index < 8, groups[index] == 0 {
                    if start == nil { start = index }
                } else if let first = start {
                    if index - first >= 2, index - first > (best?.count ?? 0) { best = first..<index }
                    start = nil
                }
            }
            let text = { (range: ArraySlice<UInt16>) in range.map { String($0, radix: 16) }.joined(separator: ":") }
            guard let best else { return text(groups[...]) }
            return text(groups[..<best.lowerBound]) + "::" + text(groups[best.upperBound...])
        }
    }

    private static func dotted(_ value: UInt32) -> String {
        [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
    }

    // MARK: - IPv4

    /// `inet_aton` rules: 1 to 4 parts; decimal, `0`-octal or `0x`-hex.
    static func parseV4(_ text: Substring) -> UInt32? {
        var text = text
        if text.last == ".", text.count > 1 { text = text.dropLast() }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard let value = parseV4Part(part) else { return nil }
            values.append(value)
        }
        var result: UInt64 = 0
        for (position, value) in values.enumerated() {
            if position < values.count - 1 {
                guard value <= 0xFF else { return nil }
                result |= value << UInt64(8 * (3 - position))
            } else {
                let bits = 8 * (4 - position)
                guard value < (UInt64(1) << UInt64(bits)) else { return nil }
                result |= value
            }
        }
        return UInt32(result)
    }

    private static func parseV4Part(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.count <= 40 else { return nil }
        var digits = part
        var radix = 10
        if digits.count >= 2, digits.first == "0", digits.dropFirst().first == "x" || digits.dropFirst().first == "X" {
            digits = digits.dropFirst(2)
            radix = 16
            // `0x` alone is 0 for browsers; `inet_aton` refuses it. Reading it
            // as 0 can only classify more strictly.
            if digits.isEmpty { return 0 }
        } else if digits.count >= 2, digits.first == "0" {
            digits = digits.dropFirst()
            radix = 8
        }
        // `UInt64(_:radix:)` also takes a sign; a host never has one.
        guard digits.allSatisfy({ $0.isHexDigit && $0.isASCII }),
            let value = UInt64(digits, radix: radix), value <= UInt64(UInt32.max)
        else { return nil }
        return value
    }

    // MARK: - IPv6

    /// RFC 4291 text: eight groups, one `::`, optional dotted IPv4 tail,
    /// optional `%zone` (also `%25zone` as in URLs).
    static func parseV6(_ text: Substring) -> [UInt8]? {
        var text = text
        if let percent = text.firstIndex(of: "%") { text = text[..<percent] }
        guard !text.isEmpty, text.count <= 45 else { return nil }
        let head: [UInt16]
        var tail: [UInt16] = []
        var sawGap = false
        if let gap = text.range(of: "::") {
            sawGap = true
            let after = text[gap.upperBound...]
            guard !after.contains("::"), let left = groups(text[..<gap.lowerBound], allowV4Tail: false),
                let right = groups(after, allowV4Tail: true)
            else { return nil }
            head = left
            tail = right
        } else {
            guard let all = groups(text, allowV4Tail: true) else { return nil }
            head = all
        }
        let total = head.count + tail.count
        if sawGap {
            guard total <= 7 else { return nil }
        } else {
            guard total == 8 else { return nil }
        }
        let words = head + Array(repeating: 0, count: 8 - total) + tail
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    /// Colon-separated hex groups; an empty string is no group. A dotted
    /// IPv4 tail counts as two groups.
    private static func groups(_ text: Substring, allowV4Tail: Bool) -> [UInt16]? {
        if text.isEmpty { return [] }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        var words: [UInt16] = []
        for (position, part) in parts.enumerated() {
            if allowV4Tail, position == parts.count - 1, part.contains(".") {
                // Only strict dotted-decimal here, as inet_pton wants.
                let octets = part.split(separator: ".", omittingEmptySubsequences: false)
                guard octets.count == 4 else { return nil }
                var value: UInt32 = 0
                for octet in octets {
                    guard !octet.isEmpty, octet.count <= 3, octet.allSatisfy({ $0.isASCII && $0.isNumber }),
                        let byte = UInt8(octet, radix: 10)
                    else { return nil }
                    value = value << 8 | UInt32(byte)
                }
                words.append(UInt16(value >> 16))
                words.append(UInt16(value & 0xFFFF))
                continue
            }
            guard !part.isEmpty, part.count <= 4, part.allSatisfy({ $0.isHexDigit && $0.isASCII }),
                let word = UInt16(part, radix: 16)
            else { return nil }
            words.append(word)
        }
        return words
    }
}
