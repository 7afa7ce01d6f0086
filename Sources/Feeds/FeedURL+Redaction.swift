/// What of a URL a person or another program may see.
///
/// Paid and private feeds carry their token in the URL, as userinfo
/// (`https://user:secret@host/feed`) or in the query (`?token=secret`). A
/// redacted URL keeps the scheme, the user name, the host, the port and the
/// path, which say which feed it is, and never the password, a query value or
/// the fragment. The full URL stays in the cache index, which needs it to
/// fetch; everything shown (extended attributes, `podfs status`, the
/// `.podfs/status` files) and everything logged goes through here.
extension FeedURL {
    // MARK: - Nested types

    /// Who reads the redacted URL.
    public enum Audience: Sendable {
        /// Status output, extended attributes: the query's names stay, each
        /// value becomes `***` (`?token=***`).
        case display
        /// Log lines and error messages, which people paste into bug
        /// reports: the query is dropped whole.
        case log
    }

    // MARK: - Public methods

    /// `url` with its secrets replaced: a password by `***`
    /// (`https://user:***@host/path`), a user name that comes without a
    /// password (often a token itself) by `***`, a port that is not a
    /// number (a password cut short by a stray `/` or `#`) by `***`; query
    /// values by `***` (`display`) or the whole query dropped (`log`); the
    /// fragment dropped. Text without a scheme is read as starting with the
    /// authority (`user:pw@host/path`); any text gives a result, never a
    /// longer secret than the input had.
    public static func redacted(_ url: String, for audience: Audience = .display) -> String {
        var rest = Substring(url)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var prefix = ""
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://"), isScheme(rest[..<colon]) {
            let authorityStart = rest.index(colon, offsetBy: 3)
            prefix = String(rest[..<authorityStart])
            rest = rest[authorityStart...]
        } else if rest.hasPrefix("//") {
            prefix = "//"
            rest = rest.dropFirst(2)
        }
        var authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        // A password with a raw `/` ends the authority early, at what then
        // looks like a port that is no number: the userinfo runs to the
        // last `@`.
        let authority = rest[..<authorityEnd]
        if !authority.contains("@"), hasWordPort(authority), let at = rest.lastIndex(of: "@") {
            authorityEnd = rest[at...].firstIndex(of: "/") ?? rest.endIndex
        }
        var result = prefix + redactedAuthority(rest[..<authorityEnd]) + rest[authorityEnd...]
        if audience == .display, let query, !query.isEmpty {
            result += "?" + redactedQuery(query)
        }
        return result
    }

    // MARK: - Private methods

    /// `userinfo@host:port` with the userinfo's secret and a port that is
    /// not a number replaced. The userinfo ends at the last `@`, so a
    /// password with a raw `@` in it is hidden whole.
    private static func redactedAuthority(_ authority: Substring) -> String {
        var hostAndPort = authority
        var userinfo = ""
        if let at = authority.lastIndex(of: "@") {
            let user = authority[..<at]
            if let colon = user.firstIndex(of: ":") {
                userinfo = user[..<colon] + ":***@"
            } else {
                userinfo = user.isEmpty ? "@" : "***@"
            }
            hostAndPort = authority[authority.index(after: at)...]
        }
        var host = hostAndPort
        var port: Substring?
        if hostAndPort.first == "[", let close = hostAndPort.firstIndex(of: "]") {
            host = hostAndPort[...close]
            let after = hostAndPort[hostAndPort.index(after: close)...]
            if !after.isEmpty { port = after.first == ":" ? after.dropFirst() : after }
        } else if let colon = hostAndPort.firstIndex(of: ":") {
            host = hostAndPort[..<colon]
            port = hostAndPort[hostAndPort.index(after: colon)...]
        }
        var result = userinfo + host
        if let port {
            result += ":" + (port.allSatisfy { $0.isASCII && $0.isNumber } ? String(port) : "***")
        }
        return result
    }

    /// `a=1&b&c=3` as `a=***&***&c=***`: the names say what the feed
    /// needs, the values are what must stay private.
    private static func redactedQuery(_ query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { field -> String in
            guard let equals = field.firstIndex(of: "=") else { return field.isEmpty ? "" : "***" }
            return field[..<equals] + "=***"
        }.joined(separator: "&")
    }

    /// `host:text` where the text is not a port number.
    private static func hasWordPort(_ authority: Substring) -> Bool {
        guard authority.first != "[", let colon = authority.firstIndex(of: ":") else { return false }
        return !authority[authority.index(after: colon)...].allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// RFC 3986: a letter, then letters, digits, `+`, `-` and `.`.
    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
