/// Reads a SOURCE file: the feeds a user wants mounted.
///
/// Two forms: an OPML document (every `<outline>` with an `xmlUrl`
/// attribute, at any depth, attribute name in any capitalisation) or plain
/// text with one feed URL per line, where blank lines, lines starting with
/// `#` and a `#` comment after white space are ignored. The podcast subscription schemes `feed://`, `itpc://`,
/// `pcast://` and `podcast://` are read as `http://`.
public enum SourceList {
    // MARK: - Public methods

    /// The feed URLs in `bytes`, in order, duplicates removed.
    ///
    /// In a plain list, a line that is not an http(s) URL is an error naming
    /// the line, since a person typed it. In OPML, outlines whose `xmlUrl` is
    /// not http(s) are skipped, since apps write such entries.
    public static func parse(_ bytes: [UInt8]) throws(FeedError) -> [String] {
        let urls = isOPML(bytes) ? try opml(bytes) : try lines(bytes)
        var seen = Set<String>()
        return urls.filter { seen.insert($0).inserted }
    }

    /// The title each feed URL of `bytes` is given there, if any: an
    /// outline's `title`, else its `text` when that is not the URL; in a
    /// plain list, the comment after the URL (`podfs subscribe` writes the
    /// show's title there). The first one given wins.
    public static func titles(in bytes: [UInt8]) -> [String: String] {
        var titles: [String: String] = [:]
        if isOPML(bytes) {
            guard let document = try? XMLDocument(parsing: bytes, baseURL: "") else { return [:] }
            withExtendedLifetime(document) { collectTitles(document.root, into: &titles) }
            return titles
        }
        for line in lineTexts(bytes) {
            guard let url = entry(ofLine: line).flatMap(feedURL), titles[url] == nil,
                let title = comment(ofLine: line)
            else { continue }
            titles[url] = title
        }
        return titles
    }

    /// What is wrong with `bytes` when they are OPML that is not
    /// well-formed (libxml2's complaint, with its line): `parse` reads it
    /// in recover mode, and the outlines after the damage may be missing.
    /// `nil` for a well-formed document or a plain list.
    public static func damage(in bytes: [UInt8]) -> String? {
        guard isOPML(bytes) else { return nil }
        do {
            let document = try XMLDocument(parsing: bytes, baseURL: "")
            return document.isRecovered ? (document.problem ?? "not well-formed XML") : nil
        } catch {
            return error.message
        }
    }

    // MARK: - Internal methods

    /// Whether `bytes` are read as OPML (they start, after white space and
    /// any byte order mark, with `<`) rather than as a plain list.
    static func isOPML(_ bytes: [UInt8]) -> Bool {
        let start = XMLInput.strippingLeadingWhitespace(bytes)
        return start.first == UInt8(ascii: "<") || start.starts(with: [0xEF, 0xBB, 0xBF, UInt8(ascii: "<")])
            || start.starts(with: [0xFF, 0xFE]) || start.starts(with: [0xFE, 0xFF])
    }

    /// `raw` as an absolute http(s) feed URL, with the subscription schemes
    /// rewritten and the escapes of `FeedURL.resolveHTTP`: the form in which
    /// two entries are the same feed; `nil` when it is not one. Lists from
    /// elsewhere (a sync server) go through here too, so one feed has one
    /// spelling whichever list named it.
    public static func feedURL(_ raw: String) -> String? {
        var text = raw.trimmingWhitespace()
        let lower = text.lowercased()
        for scheme in ["feed://", "itpc://", "pcast://", "podcast://"] where lower.hasPrefix(scheme) {
            text = "http://" + text.dropFirst(scheme.count)
        }
        if lower.hasPrefix("feed:http://") || lower.hasPrefix("feed:https://") {
            text = String(text.dropFirst("feed:".count))
        }
        return FeedURL.resolveHTTP(text, base: "")
    }

    /// What makes two spellings of a feed URL the same feed: the scheme
    /// and host in any case, a port the scheme has by default written or
    /// not, or left empty, a query left empty (`feed.xml?`), a fragment
    /// (never sent), and a percent-encoding's hex case or an encoded
    /// unreserved character are not told apart. The path and query keep their case, as servers
    /// do. Compared, never stored: a subscription keeps its spelling, which
    /// keys its show's cache.
    public static func feedIdentity(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return url }
        let scheme = url[..<colon].lowercased()
        let rest = url[url.index(colon, offsetBy: 3)...]
        var end = rest.firstIndex { $0 == "#" } ?? rest.endIndex
        let authorityEnd = rest[..<end].firstIndex { $0 == "/" || $0 == "?" } ?? end
        var authority = String(rest[..<authorityEnd])
        // The host is what follows the user information, if any.
        let hostStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let user = authority[..<hostStart]
        var host = authority[hostStart...].lowercased()
        for (defaultScheme, port) in [("http", ":80"), ("https", ":443")] where scheme == defaultScheme {
            if host.hasSuffix(port) { host.removeLast(port.count) }
        }
        // An empty port is no port (RFC 3986, 6.2.3).
        if host.hasSuffix(":") { host.removeLast() }
        authority = user + host
        if end > authorityEnd, rest[rest.index(before: end)] == "?" { end = rest.index(before: end) }
        var path = percentEncodingsNormalized(rest[authorityEnd..<end])
        if path.isEmpty { path = "/" }
        return scheme + "://" + authority + path
    }

    /// `text` with each percent-encoding's hex digits in upper case and an
    /// encoded unreserved character (a letter, a digit, `-._~`) decoded,
    /// as RFC 3986 (6.2.2.1, 6.2.2.2) says they are the same: `%2f` is
    /// `%2F`, `%7E` is `~`. Anything else is kept as written.
    static func percentEncodingsNormalized(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        let bytes = Array(text.utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        let hex = { (byte: UInt8) -> UInt8? in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2])
            else {
                out.append(bytes[index])
                index += 1
                continue
            }
            let value = high << 4 | low
            let unreserved =
                (value >= 0x41 && value <= 0x5A) || (value >= 0x61 && value <= 0x7A) || (value >= 0x30 && value <= 0x39)
                || value == UInt8(ascii: "-") || value == UInt8(ascii: ".") || value == UInt8(ascii: "_")
                || value == UInt8(ascii: "~")
            if unreserved {
                out.append(value)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(value >> 4)], digits[Int(value & 0x0F)]]
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What one line of a plain list names, before `feedURL`: `nil` for a
    /// blank line or a comment. A `#` after white space starts a comment
    /// (a URL has no white space; a `#` within one is its fragment).
    static func entry(ofLine line: String) -> String? {
        let text = line.trimmingWhitespace()
        if text.hasPrefix("#") { return nil }
        let entry = commentStart(in: text).map { String(text[..<$0]).trimmingWhitespace() } ?? text
        return entry.isEmpty ? nil : entry
    }

    /// The comment after an entry of a plain list (`URL # Title`), without
    /// its `#` and white space; `nil` when there is none or it is empty.
    static func comment(ofLine line: String) -> String? {
        let text = line.trimmingWhitespace()
        guard !text.hasPrefix("#"), let start = commentStart(in: text) else { return nil }
        let comment = String(text[text.index(after: start)...]).trimmingWhitespace()
        return comment.isEmpty ? nil : comment
    }

    // MARK: - Private methods

    private static func opml(_ bytes: [UInt8]) throws(FeedError) -> [String] {
        let document = try XMLDocument(parsing: bytes, baseURL: "")
        guard document.root.localName.lowercased() == "opml" else {
            throw FeedError(
                "not an OPML document: the root element is <\(document.root.qualifiedName)>, expected <opml>")
        }
        var urls: [String] = []
        collect(document.root, into: &urls)
        return withExtendedLifetime(document) { urls }
    }

    private static func collect(_ element: XMLElement, into urls: inout [String]) {
        for child in element.children {
            if child.localName.lowercased() == "outline", let raw = child.attribute("xmlUrl", ignoringCase: true),
                let url = feedURL(raw)
            {
                urls.append(url)
            }
            collect(child, into: &urls)
        }
    }

    /// Where a comment starts in a trimmed line: a `#` after white space
    /// (a URL has no white space; a `#` within one is its fragment).
    private static func commentStart(in text: String) -> String.Index? {
        var previous: Character = "#"
        return text.firstIndex { character in
            defer { previous = character }
            return character == "#" && (previous == " " || previous == "\t")
        }
    }

    private static func collectTitles(_ element: XMLElement, into titles: inout [String: String]) {
        for child in element.children {
            if child.localName.lowercased() == "outline", let raw = child.attribute("xmlUrl", ignoringCase: true),
                let url = feedURL(raw), titles[url] == nil
            {
                let named = [child.attribute("title", ignoringCase: true), child.attribute("text", ignoringCase: true)]
                    .compactMap { $0?.trimmingWhitespace() }
                    .first { !$0.isEmpty && $0 != raw && feedURL($0) != url }
                if let named { titles[url] = named }
            }
            collectTitles(child, into: &titles)
        }
    }

    /// The lines of a plain list, without a byte order mark.
    private static func lineTexts(_ bytes: [UInt8]) -> [String] {
        var content = bytes[...]
        if content.starts(with: [0xEF, 0xBB, 0xBF]) { content = content.dropFirst(3) }
        return content.split(separator: 0x0A, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    private static func lines(_ bytes: [UInt8]) throws(FeedError) -> [String] {
        var urls: [String] = []
        for (index, line) in lineTexts(bytes).enumerated() {
            guard let text = entry(ofLine: line) else { continue }
            guard let url = feedURL(text) else {
                // Shown and logged: a mistyped URL may still carry its token.
                let shown = FeedURL.redacted(text, for: .log)
                throw FeedError("line \(index + 1): \"\(shown)\" is not an http or https feed URL")
            }
            urls.append(url)
        }
        return urls
    }
}
