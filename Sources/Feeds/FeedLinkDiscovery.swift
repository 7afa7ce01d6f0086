/// Finds the feeds an HTML page announces, as a browser's feed discovery
/// does: `<link rel="alternate" type="application/rss+xml" href="...">`
/// (or `application/atom+xml`).
///
/// Any bytes are accepted and the work grows linearly with them: the page is
/// read by `HTMLTagScanner`, never by an XML parser, since HTML is not XML.
/// Every URL returned is an absolute http(s) URL that `FeedURL.resolveHTTP`
/// accepts.
public enum FeedLinkDiscovery {
    // MARK: - Private constants

    /// The `type` values of a feed link, lowercased, without parameters.
    private static let feedTypes: Set<String> = ["application/rss+xml", "application/atom+xml"]

    // MARK: - Public methods

    /// The feed links of the page `bytes` fetched from `base`, in document
    /// order, duplicates removed.
    ///
    /// A link counts when its `rel` holds the token `alternate` (among
    /// others, in any case) and its `type` names RSS or Atom. Each `href` is
    /// resolved against the page's first `<base href>` when it has one that
    /// resolves against `base` to an http(s) URL, else against `base`; links
    /// that do not resolve to an http(s) URL are left out.
    public static func feedLinks(inHTML bytes: [UInt8], base: String) -> [String] {
        var hrefs: [String] = []
        var baseHref: String?
        HTMLTagScanner.forEachStartTag(in: bytes) { tag in
            switch tag.name {
            case "base" where baseHref == nil:
                baseHref = tag.attribute("href", in: bytes)
            case "link" where isFeedLink(tag, in: bytes):
                if let href = tag.attribute("href", in: bytes) { hrefs.append(href) }
            default:
                break
            }
        }
        let documentBase = baseHref.flatMap { FeedURL.resolveHTTP(urlText($0), base: base) } ?? base
        var seen = Set<String>()
        return hrefs.compactMap { FeedURL.resolveHTTP(urlText($0), base: documentBase) }
            .filter { seen.insert($0).inserted }
    }

    // MARK: - Private methods

    private static func isFeedLink(_ tag: HTMLTagScanner.Tag, in bytes: [UInt8]) -> Bool {
        guard let rel = tag.attribute("rel", in: bytes), let type = tag.attribute("type", in: bytes) else {
            return false
        }
        // HTML splits `rel` at ASCII white space only.
        let relTokens = Array(rel.lowercased().utf8).split {
            $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0C || $0 == 0x0D
        }
        let mediaType = type.lowercased().split(separator: ";", omittingEmptySubsequences: false)[0]
        return relTokens.contains { $0.elementsEqual("alternate".utf8) }
            && feedTypes.contains(String(mediaType).trimmingWhitespace())
    }

    /// An attribute value as the URL parser reads it: tabs and line ends
    /// inside are dropped (the WHATWG URL standard).
    private static func urlText(_ value: String) -> String {
        String(value.unicodeScalars.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" })
    }
}
