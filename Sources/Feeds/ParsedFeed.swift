/// One feed as podfs needs it: a title, dates, and the episodes that have
/// something to download.
///
/// Every episode in `episodes` has an http or https enclosure URL; items
/// without one are left out. Exact duplicate items are reported once, in the
/// position of their first occurrence.
public struct ParsedFeed: Sendable, Equatable {
    // MARK: - Properties

    /// The channel (or Atom feed) title, entities and CDATA decoded, trimmed
    /// of surrounding white space, otherwise as the publisher wrote it.
    public var title: String?

    /// Unix seconds UTC: `lastBuildDate`, else the channel's `pubDate` (or
    /// `dc:date`), else Atom's `<updated>`.
    public var lastBuildDate: Int64?

    /// `itunes:image href`, else `<image><url>`, else Atom `<logo>`/`<icon>`.
    public var imageURL: String?

    /// Episodes in document order.
    public var episodes: [ParsedEpisode]

    // MARK: - Init

    public init(
        title: String? = nil, lastBuildDate: Int64? = nil, imageURL: String? = nil,
        episodes: [ParsedEpisode] = []
    ) {
        self.title = title
        self.lastBuildDate = lastBuildDate
        self.imageURL = imageURL
        self.episodes = episodes
    }
}

/// One item of a feed that carries a downloadable enclosure.
public struct ParsedEpisode: Sendable, Equatable {
    // MARK: - Properties

    /// The `<guid>` (RSS), `<id>` (Atom) or `rdf:about` (RSS 1.0); `nil` when
    /// missing or empty.
    public var guid: String?

    /// The item title, decoded and trimmed, not sanitised.
    public var title: String?

    /// Unix seconds UTC; `nil` when missing or unparseable.
    public var published: Int64?

    /// Absolute http or https URL, trimmed and resolved against the feed URL;
    /// contains no white space, control characters or backslashes.
    public var enclosureURL: String

    /// Declared size in bytes; `nil` when missing, zero, negative or not a
    /// number. Often wrong in real feeds: never trust it as the file size.
    public var enclosureLength: Int64?

    /// MIME type as declared, lowercased and trimmed; `nil` when missing.
    public var enclosureType: String?

    /// What identifies this episode across refreshes: the GUID when present,
    /// else the enclosure URL.
    public var identity: String {
        if let guid, !guid.isEmpty { return guid }
        return enclosureURL
    }

    // MARK: - Init

    public init(
        guid: String? = nil, title: String? = nil, published: Int64? = nil,
        enclosureURL: String, enclosureLength: Int64? = nil, enclosureType: String? = nil
    ) {
        self.guid = guid
        self.title = title
        self.published = published
        self.enclosureURL = enclosureURL
        self.enclosureLength = enclosureLength
        self.enclosureType = enclosureType
    }
}
