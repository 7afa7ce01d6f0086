internal import CXML2
internal import Glibc

/// Turns a URL as written in a feed into an absolute http(s) URL that is safe
/// to hand to the HTTP client, or rejects it.
///
/// A returned URL has an `http` or `https` scheme (lowercased), a host made
/// of letters, digits, `-`, `.`, `_` and `~` (or a bracketed IPv6 literal),
/// an optional numeric port up to 65535, and only characters RFC 3986
/// allows: no white space, control characters, backslashes or non-ASCII.
/// Spaces, non-ASCII characters and the few ASCII characters browsers also
/// escape (`"<>^`{|}` and a `%` that starts no escape) are percent-encoded as
/// UTF-8. A URL that carries a replacement character or a noncharacter (what
/// the feed parser puts where a document had a NUL or another forbidden
/// character) is rejected, never shortened or glued.
public enum FeedURL {
    // MARK: - Private constants

    private static let schemes = ["http://", "https://"]

    // MARK: - Public methods

    /// Resolves `raw` against `base` (RFC 3986, by libxml2's `xmlBuildURI`);
    /// `nil` when the result is not a usable http(s) URL.
    public static func resolveHTTP(_ raw: String, base: String) -> String? {
        let trimmed = raw.trimmingWhitespace()
        // Most URLs in feeds come out as written: keep the string.
        if trimmed.utf8.withContiguousStorageIfAvailable(isKeptAsWritten) == true { return trimmed }
        guard let encoded = percentEncoded(trimmed), !encoded.isEmpty else { return nil }
        // An absolute URL needs no resolving (`xmlBuildURI` would return it
        // unchanged), and libxml2 refuses some that browsers accept.
        if scheme(of: encoded) != nil { return validated(encoded) }
        guard let built = xmlBuildURI(encoded + [0], base) else { return nil }
        // libxml2 allocates with malloc unless xmlMemSetup says otherwise,
        // and `xmlFree` (a C global) is not visible from strict Swift.
        defer { free(built) }
        return validated(Array(UnsafeBufferPointer(start: built, count: strlen(built))))
    }

    // MARK: - Private methods

    /// The UTF-8 bytes of `text` with the escapes described on the type;
    /// `nil` when it holds a control character, a backslash or a damaged
    /// character.
    private static func percentEncoded(_ text: String) -> [UInt8]? {
        // A native string's bytes are read in place.
        if let encoded = text.utf8.withContiguousStorageIfAvailable(percentEncoded(utf8:)) { return encoded }
        return Array(text.utf8).withUnsafeBufferPointer(percentEncoded(utf8:))
    }

    /// `percentEncoded(_:)` on the bytes of a `String` (valid UTF-8).
    private static func percentEncoded(utf8 bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "\\") { return nil }
                let startsEscape =
                    index + 2 < bytes.count && isHexDigit(bytes[index + 1]) && isHexDigit(bytes[index + 2])
                if isEscapedASCII(byte) || (byte == UInt8(ascii: "%") && !startsEscape) {
                    appendEscape(byte, to: &output)
                } else {
                    output.append(byte)
                }
                index += 1
                continue
            }
            // `String` holds valid UTF-8: the lead byte gives the length.
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
            var value = UInt32(byte) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
            for offset in 1..<length {
                value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
            }
            // C1 controls; U+FFFD and noncharacters mark damage.
            if value <= 0x9F || value == 0xFFFD || (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE {
                return nil
            }
            for offset in 0..<length {
                appendEscape(bytes[index + offset], to: &output)
            }
            index += length
        }
        return output
    }

    /// Whether `resolveHTTP` returns `url` unchanged: an absolute URL with
    /// its scheme in lowercase that `validated` accepts (so every byte is
    /// printable ASCII that needs no escape) and whose every `%` starts an
    /// escape, so that `percentEncoded` changes nothing.
    private static func isKeptAsWritten(_ url: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let scheme = scheme(of: url), url.starts(with: scheme.utf8) else { return false }
        for index in url.indices where url[index] == UInt8(ascii: "%") {
            guard index + 2 < url.count, isHexDigit(url[index + 1]), isHexDigit(url[index + 2]) else { return false }
        }
        return isValid(url, schemeLength: scheme.utf8.count)
    }

    /// `http://` or `https://` in any case at the start, lowercased.
    private static func scheme(of url: some Collection<UInt8>) -> String? {
        for scheme in schemes where url.count >= scheme.utf8.count {
            if zip(url, scheme.utf8).allSatisfy({ ($0 | 0x20) == ($1 | 0x20) && ($1 != 0x3A || $0 == 0x3A) }) {
                return scheme
            }
        }
        return nil
    }

    private static func validated(_ url: [UInt8]) -> String? {
        guard let scheme = scheme(of: url),
            url.withUnsafeBufferPointer({ isValid($0, schemeLength: scheme.utf8.count) })
        else { return nil }
        // Most URLs have their scheme in lowercase already.
        if url.starts(with: scheme.utf8) { return String(decoding: url, as: UTF8.self) }
        return scheme + String(decoding: url[scheme.utf8.count...], as: UTF8.self)
    }

    /// Whether `url`, whose scheme takes its first `schemeLength` bytes, has
    /// only characters RFC 3986 allows and a valid host and port.
    private static func isValid(_ url: UnsafeBufferPointer<UInt8>, schemeLength: Int) -> Bool {
        for byte in url where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\\") || isEscapedASCII(byte) {
            return false
        }
        let rest = url[schemeLength...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let hostStart = authority.lastIndex(of: UInt8(ascii: "@")).map { $0 + 1 } ?? authority.startIndex
        return isValidHostAndPort(authority[hostStart...])
    }

    /// `host`, `host:port`, `[v6]` or `[v6]:port`.
    private static func isValidHostAndPort(_ text: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var host = text
        var port = text[text.endIndex...]
        if text.first == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = text[(text.startIndex + 1)..<close]
            let literalCharacters = literal.allSatisfy {
                isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
            }
            guard !literal.isEmpty, literalCharacters else { return false }
            let after = text[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return false }
                port = after.dropFirst()
            }
            host = literal
        } else {
            if let colon = text.firstIndex(of: UInt8(ascii: ":")) {
                host = text[..<colon]
                port = text[(colon + 1)...]
            }
            let hostCharacters = host.allSatisfy {
                isASCIILetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "~")
            }
            guard !host.isEmpty, hostCharacters, host.first != UInt8(ascii: ".") else { return false }
            for (a, b) in zip(host, host.dropFirst()) where a == UInt8(ascii: ".") && b == UInt8(ascii: ".") {
                return false
            }
        }
        if !port.isEmpty {
            guard port.count <= 5, port.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
            let number = port.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard (1...65_535).contains(number) else { return false }
        }
        return true
    }

    /// ASCII characters that are not allowed in a URI and that browsers
    /// percent-encode rather than reject: space `"` `<` `>` `^` `` ` `` `{`
    /// `|` `}`.
    private static func isEscapedASCII(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x20, 0x22, 0x3C, 0x3E, 0x5E, 0x60, 0x7B, 0x7C, 0x7D: return true
        default: return false
        }
    }

    private static func appendEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "%"))
        output.append(hexDigit(byte >> 4))
        output.append(hexDigit(byte & 0x0F))
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    private static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10
    }
}
