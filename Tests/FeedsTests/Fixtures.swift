import Feeds

/// Small hand-written feeds and the byte encodings the tests need.
enum Fixtures {
    // MARK: - Properties

    /// The URL the hand-written feeds pretend to come from.
    static let base = "https://example.org/podcast/feed.xml"

    /// The namespaces a modern podcast feed declares.
    static let namespaces = """
        xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" \
        xmlns:podcast="https://podcastindex.org/namespace/1.0" \
        xmlns:media="http://search.yahoo.com/mrss/" \
        xmlns:atom="http://www.w3.org/2005/Atom"
        """

    // MARK: - Methods

    static func parse(_ xml: String, base: String = base) throws(FeedError) -> ParsedFeed {
        try FeedParser.parse(Array(xml.utf8), baseURL: base)
    }

    static func parse(_ bytes: [UInt8], base: String = base) throws(FeedError) -> ParsedFeed {
        try FeedParser.parse(bytes, baseURL: base)
    }

    /// An RSS 2.0 document with a UTF-8 declaration around `items`.
    static func rss(_ items: String, channel: String = "<title>Show</title>") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" \(namespaces)>
        <channel>\(channel)\(items)</channel></rss>
        """
    }

    /// One item with a title and an enclosure, for documents with many.
    static func item(_ title: String, url: String, extra: String = "") -> String {
        "<item><title>\(title)</title><enclosure url=\"\(url)\" type=\"audio/mpeg\"/>\(extra)</item>"
    }

    static func utf16LittleEndian(_ text: String, bom: Bool = true) -> [UInt8] {
        (bom ? [0xFF, 0xFE] : []) + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    static func utf16BigEndian(_ text: String, bom: Bool = true) -> [UInt8] {
        (bom ? [0xFE, 0xFF] : []) + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }
}

// MARK: - String helpers

extension String {
    /// The same XML with its `encoding="UTF-8"` declaration replaced.
    func replacingUTF8Declaration(with encoding: String) -> String {
        replacingOccurrences("encoding=\"UTF-8\"", "encoding=\"\(encoding)\"")
    }

    /// Stdlib-only replacement, so these tests need no Foundation.
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
