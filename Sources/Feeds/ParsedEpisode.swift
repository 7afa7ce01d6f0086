/// One item of a feed that carries a downloadable enclosure.
public struct ParsedEpisode: Sendable, Equatable {
    // MARK: - Constants

    /// The lengths an episode may have: 1 byte to 1 TiB. Hours of lossless
    /// video stay far below the top; sums and offsets built from lengths in
    /// this range cannot overflow 64 bits, however many episodes a mount
    /// lists.
    public static let lengthRange: ClosedRange<Int64> = 1...(1 << 40)

    // MARK: - Properties

    /// The `<guid>` (RSS), `<id>` (Atom) or `rdf:about` (RSS 1.0); `nil` when
    /// missing or empty.
    public var guid: String?

    /// The item title, decoded and trimmed, not sanitised.
    public var title: String?

    /// Unix seconds UTC; `nil` when missing or unparseable. An episode whose
    /// date does not parse is kept, with no date prefix and the feed's
    /// `lastBuildDate` (else 0) as its modification time (docs/DESIGN.md,
    /// "File names").
    public var published: Int64?

    /// Absolute http or https URL, trimmed and resolved against the feed URL;
    /// contains no white space, control characters or backslashes.
    public var enclosureURL: String

    /// Declared size in bytes, within `lengthRange`; `nil` when missing,
    /// zero, negative, not a plain decimal number or larger than the range.
    /// Often wrong in real feeds: never trust it as the file size.
    public var enclosureLength: Int64?

    /// MIME type as declared, lowercased and trimmed; `nil` when missing.
    public var enclosureType: String?

    /// The episode's own artwork (`itunes:image href` on the item), an
    /// absolute http(s) URL; `nil` when the item has none.
    public var imageURL: String?

    /// `podcast:transcript` links in document order, each with an absolute
    /// http(s) URL.
    public var transcripts: [ParsedTranscript]

    /// The first usable `podcast:chapters` link.
    public var chapters: ParsedChapters?

    /// What identifies this episode across refreshes: the GUID when present,
    /// else the enclosure URL.
    public var identity: String {
        if let guid, !guid.isEmpty { return guid }
        return enclosureURL
    }

    // MARK: - Init

    public init(
        guid: String? = nil, title: String? = nil, published: Int64? = nil,
        enclosureURL: String, enclosureLength: Int64? = nil, enclosureType: String? = nil,
        imageURL: String? = nil, transcripts: [ParsedTranscript] = [], chapters: ParsedChapters? = nil
    ) {
        self.guid = guid
        self.title = title
        self.published = published
        self.enclosureURL = enclosureURL
        self.enclosureLength = enclosureLength
        self.enclosureType = enclosureType
        self.imageURL = imageURL
        self.transcripts = transcripts
        self.chapters = chapters
    }
}
