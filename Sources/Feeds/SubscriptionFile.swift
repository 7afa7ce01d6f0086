/// The text of a SOURCE file, as `podfs subscribe` and `podfs unsubscribe`
/// edit it.
///
/// An edit changes only the bytes of the entries it adds or removes: every
/// comment, every other entry and the layout stay byte for byte. `urls` is
/// always what `SourceList.parse` reads from `bytes`, and an edit changes it
/// by exactly the one URL added or removed. An edit that would do anything
/// else (in a document this type's scanner reads differently from libxml2)
/// is refused: it returns `false` and changes nothing.
///
/// The form is the one `SourceList.parse` sees: OPML when the text starts
/// with `<`, otherwise a plain list of URLs, one a line. An edit keeps it.
public struct SubscriptionFile: Sendable, Equatable {
    // MARK: - Nested types

    private enum Form: Sendable, Equatable {
        case lines
        case opml
    }

    // MARK: - Properties

    /// The file's text, with every edit made so far.
    public private(set) var bytes: [UInt8]

    /// The feed URLs `SourceList.parse` reads from `bytes`.
    public private(set) var urls: [String]

    /// The title the file gives each feed, where it gives one
    /// (`SourceList.titles`).
    public var titles: [String: String] { SourceList.titles(in: bytes) }

    /// Whether the file is an OPML document rather than a list of URLs.
    public var isOPML: Bool { form == .opml }

    private let form: Form

    // MARK: - Init

    /// Reads `bytes`, which may be empty (a list with no URLs yet); throws
    /// what `SourceList.parse` throws for them.
    public init(bytes: [UInt8]) throws(FeedError) {
        self.bytes = bytes
        urls = try SourceList.parse(bytes)
        form = SourceList.isOPML(bytes) ? .opml : .lines
    }

    // MARK: - Public methods

    /// Adds `url` at the end, as `SourceList` would read it (`feed://` as
    /// `http://`, spaces percent-encoded).
    ///
    /// In a list, the URL gets a line of its own, with the line ends the
    /// file already uses, and `title` after it as a comment (`URL # TITLE`). In OPML, an
    /// `<outline type="rss" text="TITLE" title="TITLE" xmlUrl="URL"/>` goes
    /// just before `</body>`, on its own line indented like the body's other
    /// children when `</body>` starts its line; `text` is the URL when
    /// `title` is `nil`, and `title` is then left out.
    ///
    /// - Returns: `false`, changing nothing, when `url` is not an http(s)
    ///   feed URL, is already listed, or the document has no `</body>` (an
    ///   empty `<body/>` included) or is in UTF-16 or UTF-32.
    public mutating func add(url: String, title: String?) -> Bool {
        guard let url = SourceList.feedURL(url), listed(url) == nil else { return false }
        let edited =
            switch form {
            case .lines: Self.appendingLine(url, title: title, to: bytes)
            case .opml: Self.insertingOutline(url: url, title: title, into: bytes)
            }
        return adopt(edited, expecting: urls + [url])
    }

    /// The URL as the file lists the feed of `url`, in any spelling of it
    /// (`SourceList.feedIdentity`); `nil` when it does not list it.
    public func listed(_ url: String) -> String? {
        guard let url = SourceList.feedURL(url) else { return nil }
        if urls.contains(url) { return url }
        let identity = SourceList.feedIdentity(url)
        return urls.first { SourceList.feedIdentity($0) == identity }
    }

    /// Removes every entry whose URL `SourceList` reads as the same feed as
    /// `url`.
    ///
    /// In a list, each such line goes, with its line end. In OPML, each such
    /// `<outline/>` or `<outline></outline>` goes, with its line when the
    /// line holds nothing else but white space.
    ///
    /// - Returns: `false`, changing nothing, when the URL is not listed, or
    ///   when an outline with it has child outlines (removing it would drop
    ///   them), or the document is in UTF-16 or UTF-32.
    public mutating func remove(url: String) -> Bool {
        guard let url = SourceList.feedURL(url) else { return false }
        // Every spelling of the feed (`feedIdentity`): one left would bring
        // the show back at the next mount.
        let identity = SourceList.feedIdentity(url)
        var spellings: [String] = []
        for listed in urls where SourceList.feedIdentity(listed) == identity && !spellings.contains(listed) {
            spellings.append(listed)
        }
        guard !spellings.isEmpty else { return false }
        var edited = self
        for spelling in spellings {
            guard edited.removeListed(spelling) else { return false }
        }
        self = edited
        return true
    }

    // MARK: - Private methods

    /// `remove` of one spelling, as listed.
    private mutating func removeListed(_ url: String) -> Bool {
        let edited =
            switch form {
            case .lines: Self.removingLines(listing: url, from: bytes)
            case .opml: Self.removingOutlines(listing: url, from: bytes)
            }
        return adopt(edited, expecting: urls.filter { $0 != url })
    }

    /// Takes `edited` when it reads as `expected`.
    private mutating func adopt(_ edited: [UInt8]?, expecting expected: [String]) -> Bool {
        guard let edited, (try? SourceList.parse(edited)) == expected else { return false }
        bytes = edited
        urls = expected
        return true
    }

    private static func appendingLine(_ url: String, title: String?, to bytes: [UInt8]) -> [UInt8] {
        let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
        let lineEnd: [UInt8] = usesCRLF(bytes) ? [0x0D, 0x0A] : [0x0A]
        var edited = bytes
        if let last = bytes.last, last != 0x0A, bytes != byteOrderMark { edited += lineEnd }
        return edited + Array((url + comment(title)).utf8) + lineEnd
    }

    /// ` # TITLE` for a list's line, on one line (control characters as
    /// spaces), or nothing for no title.
    private static func comment(_ title: String?) -> String {
        let words = (title ?? "").unicodeScalars.map { $0.properties.generalCategory == .control ? " " : String($0) }
            .joined().split(whereSeparator: \.isWhitespace)
        return words.isEmpty ? "" : " # " + words.joined(separator: " ")
    }

    /// `bytes` without the lines that `SourceList` reads as `url`.
    private static func removingLines(listing url: String, from bytes: [UInt8]) -> [UInt8] {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var edited = Array(bytes[..<start])
        var lineStart = start
        while lineStart < bytes.count {
            let newline = bytes[lineStart...].firstIndex(of: 0x0A)
            let lineEnd = newline.map { $0 + 1 } ?? bytes.count
            let line = String(decoding: bytes[lineStart..<(newline ?? bytes.count)], as: UTF8.self)
            let listsURL = SourceList.entry(ofLine: line).flatMap(SourceList.feedURL) == url
            if !listsURL { edited += bytes[lineStart..<lineEnd] }
            lineStart = lineEnd
        }
        return edited
    }

    /// Whether the file's first line ends with CR LF.
    private static func usesCRLF(_ bytes: [UInt8]) -> Bool {
        guard let newline = bytes.firstIndex(of: 0x0A) else { return false }
        return newline > 0 && bytes[newline - 1] == 0x0D
    }
}
