/// The scope a show's cache keys are made in (docs/DESIGN.md, "The cache on
/// disk", keys): the show's `podcast:guid` when its feed gives a usable one,
/// else the URL the show is subscribed by.
///
/// Two shows in one scope would share cache files, so a catalogue gives a
/// guid to one subscription at a time (`Catalog`); the other falls back to
/// `feedURL(_:)`. A scope string is never a feed URL: a guid scope starts
/// with `podcast:guid:`, which is no http(s) URL.
public struct CacheScope: Sendable, Hashable {
    // MARK: - Properties

    /// The longest `podcast:guid` taken as an identity, in UTF-8 bytes (the
    /// specification's are 36-character UUIDs).
    public static let longestGUID = 200

    /// The URL the show is subscribed by.
    public let feedURL: String

    /// The show's normalised `podcast:guid` when keys are scoped by it;
    /// `nil` for the URL scope.
    public let guid: String?

    /// What `CacheIndex.episodeKey(feedURL:identity:)` takes as its scope.
    public var keyScope: String {
        guid.map { "podcast:guid:" + $0 } ?? feedURL
    }

    /// The URL scope of the same subscription when this is a guid scope:
    /// where a cache made before shows were known by guid keeps its files.
    public var urlScope: CacheScope? {
        guid == nil ? nil : .feedURL(feedURL)
    }

    // MARK: - Init

    /// The scope the feed asks for: its `podcast:guid`, normalised, when it
    /// has a usable one, else `feedURL`.
    public init(feedURL: String, showGUID: String?) {
        self.feedURL = feedURL
        guid = Self.normalizedGUID(showGUID)
    }

    private init(feedURL: String) {
        self.feedURL = feedURL
        guid = nil
    }

    // MARK: - Methods

    /// The URL scope: keys made from the subscribed feed URL alone.
    public static func feedURL(_ url: String) -> CacheScope {
        CacheScope(feedURL: url)
    }

    /// A `podcast:guid` trimmed of white space and lowercased (a UUID's case
    /// says nothing), or `nil` when it is empty, longer than `longestGUID`
    /// bytes or holds a control character: a value like that is no one's
    /// identity, and the URL scope is safer than a key shared by accident.
    public static func normalizedGUID(_ raw: String?) -> String? {
        guard let raw else { return nil }
        let trimmed = raw.trimmingWhiteSpace()
        guard !trimmed.isEmpty, trimmed.utf8.count <= longestGUID else { return nil }
        let hasControl = trimmed.unicodeScalars.contains { $0.properties.generalCategory == .control }
        return hasControl ? nil : trimmed.lowercased()
    }
}

extension String {
    /// The string without white space (newlines included) at either end.
    fileprivate func trimmingWhiteSpace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
