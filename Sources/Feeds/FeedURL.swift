internal import CXML2
internal import Glibc

/// Turns a URL as written in a feed into an absolute http(s) URL that is safe
/// to hand to the HTTP client, or rejects it.
///
/// A returned URL has an `http` or `https` scheme (lowercased), a host, and no
/// white space, control characters or backslashes. Spaces and non-ASCII
/// characters inside the URL are percent-encoded as UTF-8.
public enum FeedURL {
    // MARK: - Public methods

    /// Resolves `raw` against `base` (RFC 3986, by libxml2's `xmlBuildURI`);
    /// `nil` when the result is not a usable http(s) URL.
    public static func resolveHTTP(_ raw: String, base: String) -> String? {
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { return nil }
        var encoded = ""
        for scalar in trimmed.unicodeScalars {
            let value = scalar.value
            if value < 0x20 || value == 0x7F || (0x80...0x9F).contains(value) || scalar == "\\" {
                return nil
            }
            if scalar == " " || value > 0x7E {
                for byte in String(scalar).utf8 {
                    encoded += "%" + hexDigit(byte >> 4) + hexDigit(byte & 0x0F)
                }
            } else {
                encoded.unicodeScalars.append(scalar)
            }
        }
        var resolved: String?
        if let built = xmlBuildURI(encoded, base) {
            resolved = String(cString: built)
            // libxml2 allocates with malloc unless xmlMemSetup says otherwise,
            // and `xmlFree` (a C global) is not visible from strict Swift.
            free(built)
        }
        if let resolved, let valid = validated(resolved) { return valid }
        // libxml2 refuses some absolute URLs browsers accept ("{", "|"):
        // an absolute http(s) URL needs no resolving anyway.
        return validated(encoded)
    }

    // MARK: - Private methods

    private static func validated(_ url: String) -> String? {
        let lower = url.lowercased()
        let scheme: String
        if lower.hasPrefix("http://") {
            scheme = "http://"
        } else if lower.hasPrefix("https://") {
            scheme = "https://"
        } else {
            return nil
        }
        let rest = url.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last ?? ""
        guard !host.isEmpty, !host.hasPrefix(":") else { return nil }
        for scalar in url.unicodeScalars
        where scalar.value <= 0x20 || scalar.value >= 0x7F || scalar == "\\" {
            return nil
        }
        return scheme + rest
    }

    private static func hexDigit(_ nibble: UInt8) -> String {
        String(UnicodeScalar(nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10))
    }
}
