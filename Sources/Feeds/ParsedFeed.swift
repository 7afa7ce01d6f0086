/// One feed as podfs needs it: a title, dates, and the episodes that have
/// something to download.
///
/// Every episode in `episodes` has an http or https enclosure URL; items
/// without one are left out, and so are items that a malformed document cut
/// off or damaged. Exact duplicate items (same identity and same enclosure
/// URL) are reported once, in the position of their first occurrence.
public struct ParsedFeed: Sendable, Equatable {
    // MARK: - Properties

    /// The channel (or Atom feed) title, entities and CDATA decoded, trimmed
    /// of surrounding white space, otherwise as the publisher wrote it.
    public var title: String?

    /// Unix seconds UTC: `lastBuildDate`, else the channel's `pubDate` (or
    /// `dc:date`), else Atom's `<updated>`. It is the modification time of
    /// episodes whose own date does not parse (docs/DESIGN.md, "File names").
    public var lastBuildDate: Int64?

    /// `itunes:image href`, else `<image><url>`, else Atom `<logo>`/`<icon>`;
    /// an absolute http(s) URL.
    public var imageURL: String?

    /// Episodes in document order.
    public var episodes: [ParsedEpisode]

    /// `itunes:new-feed-url`: where the publisher says the feed now lives;
    /// an absolute http(s) URL. Followed only when it leads to a feed that
    /// parses (docs/DESIGN.md, "Feeds").
    public var newFeedURL: String?

    /// `podcast:guid`: the show's own identity, the same on every host.
    public var showGUID: String?

    /// What the parser had to repair or leave out to read a document that is
    /// not well-formed XML, one sentence each, for the log and
    /// `podfs status`. Empty for a well-formed feed.
    public var warnings: [String]

    /// The document stops before its root element ends: most likely cut
    /// off by its server, so the items past the cut are missing.
    public var endsEarly = false

    // MARK: - Init

    public init(
        title: String? = nil, lastBuildDate: Int64? = nil, imageURL: String? = nil,
        episodes: [ParsedEpisode] = [], warnings: [String] = []
    ) {
        self.title = title
        self.lastBuildDate = lastBuildDate
        self.imageURL = imageURL
        self.episodes = episodes
        self.warnings = warnings
    }
}
