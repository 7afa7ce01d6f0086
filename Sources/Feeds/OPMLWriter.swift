/// Writes subscriptions as an OPML 2.0 document.
///
/// The document is well-formed UTF-8 XML whatever the titles and URLs hold,
/// and `SourceList.parse` reads back every URL it can read as a feed URL,
/// in order: every value is escaped, and the characters XML 1.0 cannot hold
/// (most control characters) are removed from titles. A URL that holds one
/// is written with U+FFFD in its place, so that it is skipped when read
/// back rather than read as another feed.
public enum OPMLWriter {
    // MARK: - Public methods

    /// An OPML 2.0 document titled `title` with one
    /// `<outline type="rss" text=".." title=".." xmlUrl=".."/>` per entry of
    /// `outlines`, in order, indented by two spaces a level, ending with a
    /// line feed.
    public static func document(title: String, outlines: [(title: String, url: String)]) -> [UInt8] {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <opml version="2.0">
              <head>
                <title>\(XMLEscaping.text(title))</title>
              </head>
              <body>

            """
        for outline in outlines {
            let title = XMLEscaping.attributeValue(outline.title)
            let url = XMLEscaping.attributeValue(outline.url, isURL: true)
            text += "    <outline type=\"rss\" text=\"\(title)\" title=\"\(title)\" xmlUrl=\"\(url)\"/>\n"
        }
        text += "  </body>\n</opml>\n"
        return Array(text.utf8)
    }
}
