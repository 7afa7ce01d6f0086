/// What the index knows about one episode: its row, its validator, the
/// variant its bytes are of, and the byte ranges that are durably on disk
/// in its scratch file.
public struct EpisodeRecord: Sendable, Equatable {
    /// The byte positions an episode may have, 0 to 1 TiB: a length or a
    /// range outside them is not read back from the index.
    public static let positions: ClosedRange<Int64> = 0...(1 << 40)

    public let id: Int64
    public let key: String
    public let url: String
    /// The origin's total length, once a response has told it.
    public let length: Int64?
    /// The validator of the cached variant (the pinned one, when a link is
    /// pinned): sent in `If-Range` with every later range.
    public let etag: String?
    public let lastModified: String?
    /// Committed ranges: on disk and fdatasync'ed before they were recorded.
    public let ranges: [Range<Int64>]
    /// When the episode was last read (seconds since the epoch), if ever.
    public var lastRead: Int64? = nil
    /// Where the cached variant comes from and how the origin behaves
    /// (schema 2; an index of schema 1 reads as nothing known).
    public var variant = EpisodeVariant()

    public init(
        id: Int64, key: String, url: String, length: Int64?, etag: String?, lastModified: String?,
        ranges: [Range<Int64>], lastRead: Int64? = nil, variant: EpisodeVariant = EpisodeVariant()
    ) {
        self.id = id
        self.key = key
        self.url = url
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
        self.ranges = ranges
        self.lastRead = lastRead
        self.variant = variant
    }
}

/// The variant of an episode the cache holds (docs/DESIGN.md, "Episodes and
/// their variants"): a host that stitches ads per request serves different
/// bytes at each request, and the cache keeps exactly one of them.
public struct EpisodeVariant: Sendable, Equatable {
    /// The end of the redirect chain the cached bytes came from: later
    /// ranges are asked of it directly (with `If-Range`), across mounts.
    public var pinnedURL: String?
    /// Who sent podfs to `pinnedURL` (the address zone of the server that
    /// redirected), as the HTTP layer spells it, so a pinned link is fetched
    /// under the same zone rule in a later mount (guarantee 6).
    public var pinnedIssuer: String?
    /// Why the origin was found to serve different bytes per request, as a
    /// stable code (`overlap-mismatch`, `length-changed`, ...; schema 4:
    /// earlier schemas kept a sentence), or `nil` while it looks stable.
    /// Such an episode is streamed whole.
    public var unstable: String?
    /// Every byte of one variant is cached: the episode is kept as it is
    /// until the feed changes it, whatever the origin serves now.
    public var isFinal = false

    public init(pinnedURL: String? = nil, pinnedIssuer: String? = nil, unstable: String? = nil, isFinal: Bool = false) {
        self.pinnedURL = pinnedURL
        self.pinnedIssuer = pinnedIssuer
        self.unstable = unstable
        self.isFinal = isFinal
    }
}

/// An episode's length and validator as a response told them, and the link
/// that response came from.
public struct EpisodeValidator: Sendable, Equatable {
    public let key: String
    public let length: Int64
    public let etag: String?
    public let lastModified: String?
    /// The link the response came from (the end of its redirect chain),
    /// pinned with this validator; `nil` pins none.
    public let pinnedURL: String?
    /// Who sent podfs to `pinnedURL` (`EpisodeVariant.pinnedIssuer`).
    public let pinnedIssuer: String?
    /// Whether every byte of this variant is cached (`EpisodeVariant.isFinal`).
    public let isFinal: Bool

    public init(
        key: String, length: Int64, etag: String?, lastModified: String?, pinnedURL: String? = nil,
        pinnedIssuer: String? = nil, isFinal: Bool = false
    ) {
        self.key = key
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
        self.pinnedURL = pinnedURL
        self.pinnedIssuer = pinnedIssuer
        self.isFinal = isFinal
    }
}

/// A feed and its episodes as the index knows them, for `podfs status`.
public struct FeedSnapshot: Sendable {
    public let url: String
    /// The last good copy of the feed, if one was saved.
    public let body: [UInt8]?
    public let fetchedAt: Int64?
    public let episodes: [EpisodeRecord]
}

/// The last good copy of a feed document.
public struct StoredFeed: Sendable, Equatable {
    public let body: [UInt8]
    public let etag: String?
    public let lastModified: String?
    public let fetchedAt: Int64
}
