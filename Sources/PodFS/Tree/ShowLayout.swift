public import Feeds
public import Logging
import RangeCache

/// What one show folder holds, worked out from its parsed feed: the episode
/// files, the files podfs adds next to them (cover, transcripts, chapters)
/// and the playlist, each with its cache key and its name.
///
/// Every name is unique (byte for byte) in the folder and at most 255 bytes.
/// Episodes are named first (docs/DESIGN.md, "File names"); the added files take the episode's
/// base name and a suffix of their own and never push an episode's name
/// aside. Names given in `previousNames` are kept, so a refresh renames
/// nothing that is still in the feed.
public struct ShowLayout: Sendable {
    // MARK: - Nested types

    /// What kind of file an item is.
    public enum Kind: String, Sendable, Equatable {
        case episode
        case cover
        case transcript
        case chapters
    }

    /// One file of the folder that is fetched through the range cache.
    public struct Item: Sendable {
        public var kind: Kind
        /// The cache key (the scratch file's name and the index row).
        public var key: String
        /// The key the same file had in the show's URL scope, when `key` is
        /// in its guid scope (`CacheScope.urlScope`): a cache made before
        /// the show was known by its guid is taken over from there.
        public var formerKey: String?
        public var name: String
        /// Where the bytes come from.
        public var url: String
        /// The episode itself, or the one a transcript or chapters file
        /// belongs to; `nil` for the cover.
        public var episode: ParsedEpisode?
    }

    // MARK: - Properties

    /// The key under which the playlist's name is remembered across refreshes.
    public static let playlistKey = "playlist"

    /// The scope every key of the folder is made in.
    public let scope: CacheScope

    /// Episodes in feed order (duplicates left out).
    public private(set) var episodes: [Item] = []
    /// Cover, transcripts and chapters, in listing order.
    public private(set) var extras: [Item] = []
    /// `<Show>.m3u`.
    public private(set) var playlistName = ""

    // MARK: - Private constants

    /// Transcript MIME types (lowercased, without parameters) to suffix.
    private static let transcriptSuffixes: [String: String] = [
        "text/vtt": ".vtt", "text/webvtt": ".vtt",
        "application/x-subrip": ".srt", "application/srt": ".srt", "text/srt": ".srt",
        "application/x-srt": ".srt", "text/x-srt": ".srt",
        "application/json": ".json", "text/json": ".json",
        "text/html": ".html", "text/plain": ".txt",
    ]

    /// Suffixes recognised from a transcript URL's path when the type says
    /// nothing.
    private static let transcriptURLSuffixes = ["vtt", "srt", "json", "html", "txt"]

    /// Image file extensions recognised from the cover URL (else `.jpg`).
    private static let imageExtensions: [String: String] = [
        "jpg": ".jpg", "jpeg": ".jpg", "png": ".png", "webp": ".webp", "gif": ".gif",
    ]

    // MARK: - Init

    /// Lays out the folder of the feed at `feedURL` named `directoryName`,
    /// its keys in the scope the feed asks for (`CacheScope`).
    ///
    /// - Parameter previousNames: cache key to the name the file had before
    ///   this refresh (empty at mount time).
    public init(
        feedURL: String, feed: ParsedFeed, directoryName: String, previousNames: [String: String] = [:],
        logger: Logger
    ) {
        self.init(
            scope: CacheScope(feedURL: feedURL, showGUID: feed.showGUID), feed: feed, directoryName: directoryName,
            previousNames: previousNames, logger: logger)
    }

    /// Lays out the folder of the feed at `scope.feedURL` named
    /// `directoryName`, its keys in `scope` (a catalogue decides it: two
    /// subscriptions never share a guid scope).
    public init(
        scope: CacheScope, feed: ParsedFeed, directoryName: String, previousNames: [String: String] = [:],
        logger: Logger
    ) {
        self.scope = scope
        let items = Self.deduplicated(scope: scope, feed: feed, logger: logger)
        var keeping: [Int: String] = [:]
        for (position, item) in items.enumerated() {
            if let name = previousNames[item.key] { keeping[position] = name }
        }
        let names = Naming.episodeNames(
            items.map {
                Naming.EpisodeNameInput(
                    title: $0.parsed.title, published: $0.parsed.published, mimeType: $0.parsed.enclosureType,
                    url: $0.parsed.enclosureURL)
            }, keeping: keeping)
        var taken = Set(names.map { Array($0.utf8) })
        episodes = zip(items, names).map {
            Item(
                kind: .episode, key: $0.0.key, formerKey: $0.0.formerKey, name: $0.1, url: $0.0.parsed.enclosureURL,
                episode: $0.0.parsed)
        }
        // Names that stay take their place before any new one is made.
        var wanted: [(kind: Kind, key: String, stem: String, suffix: String, url: String, episode: ParsedEpisode?)] = []
        if let cover = feed.imageURL {
            let key = Self.extraKey(scope, .cover, cover, nil)
            wanted.append((.cover, key, "cover", Self.imageExtension(cover), cover, nil))
        }
        for episode in episodes {
            guard let parsed = episode.episode else { continue }
            let base = Self.baseName(episode.name, parsed)
            var usedSuffixes = Set<String>()
            for transcript in parsed.transcripts {
                var suffix = Self.transcriptSuffix(transcript)
                if usedSuffixes.contains(suffix), let language = Self.languageTag(transcript.language) {
                    suffix = "." + language + suffix
                }
                usedSuffixes.insert(suffix)
                let key = Self.extraKey(scope, .transcript, transcript.url, parsed)
                wanted.append((.transcript, key, base, suffix, transcript.url, parsed))
            }
            if let chapters = parsed.chapters {
                let key = Self.extraKey(scope, .chapters, chapters.url, parsed)
                wanted.append((.chapters, key, base, ".chapters.json", chapters.url, parsed))
            }
        }
        // The same link twice would make two files share one cache entry.
        var seenKeys = Set<String>()
        wanted = wanted.filter { seenKeys.insert($0.key).inserted }
        var extraNames = [String?](repeating: nil, count: wanted.count)
        for (position, entry) in wanted.enumerated() {
            if let name = previousNames[entry.key], !taken.contains(Array(name.utf8)) {
                taken.insert(Array(name.utf8))
                extraNames[position] = name
            }
        }
        let previousPlaylist = previousNames[Self.playlistKey].flatMap { taken.contains(Array($0.utf8)) ? nil : $0 }
        if let previousPlaylist { taken.insert(Array(previousPlaylist.utf8)) }
        for (position, entry) in wanted.enumerated() where extraNames[position] == nil {
            extraNames[position] = Naming.uniqueName(stem: entry.stem, suffix: entry.suffix, taken: &taken)
        }
        let urlScope = scope.urlScope
        extras = zip(wanted, extraNames).map { entry, name in
            Item(
                kind: entry.kind, key: entry.key,
                formerKey: urlScope.map { Self.extraKey($0, entry.kind, entry.url, entry.episode) },
                name: name ?? "", url: entry.url, episode: entry.episode)
        }
        playlistName = previousPlaylist ?? Naming.uniqueName(stem: directoryName, suffix: ".m3u", taken: &taken)
    }

    // MARK: - Methods

    /// Every item fetched through the range cache: episodes, then extras.
    public var files: [Item] { episodes + extras }

    /// Cache key to name of every file, the playlist's included: what the
    /// next refresh keeps.
    public var names: [String: String] {
        var names = Dictionary(files.map { ($0.key, $0.name) }, uniquingKeysWith: { first, _ in first })
        names[Self.playlistKey] = playlistName
        return names
    }

    /// The playlist: `#EXTM3U`, then per episode, oldest first, an
    /// `#EXTINF:-1,Title` line and its path relative to the folder.
    public func playlist() -> [UInt8] {
        let oldestFirst = episodes.indices.sorted { a, b in
            let dateA = episodes[a].episode?.published ?? Int64.min
            let dateB = episodes[b].episode?.published ?? Int64.min
            return dateA != dateB ? dateA < dateB : a > b
        }
        var text = "#EXTM3U\n"
        for position in oldestFirst {
            let item = episodes[position]
            let title = Self.oneLine(item.episode?.title) ?? item.name
            // A line starting with '#' would read as a comment.
            let path = item.name.hasPrefix("#") ? "./" + item.name : item.name
            text += "#EXTINF:-1,\(title)\n\(path)\n"
        }
        return Array(text.utf8)
    }

    // MARK: - Private methods

    /// A feed's episodes with their keys (and their URL-scope keys, for a
    /// guid scope), duplicates left out: two items with the same identity
    /// (copied items) would share a cache file; the first is kept, or they
    /// are told apart by their enclosure. Which identity an item gets
    /// depends only on the feed, so its key in either scope is made from
    /// the same identity.
    private static func deduplicated(
        scope: CacheScope, feed: ParsedFeed, logger: Logger
    ) -> [(parsed: ParsedEpisode, key: String, formerKey: String?)] {
        var seen = Set<String>()
        var items: [(parsed: ParsedEpisode, key: String, formerKey: String?)] = []
        items.reserveCapacity(feed.episodes.count)
        let urlScope = scope.urlScope
        for parsed in feed.episodes {
            var identity = parsed.identity
            var key = CacheIndex.episodeKey(feedURL: scope.keyScope, identity: identity)
            if seen.contains(key) {
                identity = parsed.identity + "\n" + parsed.enclosureURL
                key = CacheIndex.episodeKey(feedURL: scope.keyScope, identity: identity)
                if seen.contains(key) {
                    logger.notice(
                        "skipping a duplicate episode",
                        metadata: ["feed.url": .url(scope.feedURL), "episode.title": "\(parsed.title ?? "")"])
                    continue
                }
            }
            seen.insert(key)
            let formerKey = urlScope.map { CacheIndex.episodeKey(feedURL: $0.keyScope, identity: identity) }
            items.append((parsed, key, formerKey))
        }
        return items
    }

    /// The key of an added file: its role (with its episode's identity) and
    /// URL, so a new URL is a new file in the cache.
    private static func extraKey(_ scope: CacheScope, _ kind: Kind, _ url: String, _ episode: ParsedEpisode?) -> String {
        let role = switch kind {
        case .episode, .cover: kind.rawValue
        case .transcript, .chapters: (episode?.identity ?? "") + "\u{0}" + kind.rawValue
        }
        return CacheIndex.episodeKey(feedURL: scope.keyScope, identity: "\u{0}" + role + "\u{0}" + url)
    }

    /// An episode's name without its media extension.
    private static func baseName(_ name: String, _ parsed: ParsedEpisode) -> String {
        let ext = Naming.fileExtension(mimeType: parsed.enclosureType, url: parsed.enclosureURL)
        guard !ext.isEmpty, name.hasSuffix(ext) else { return name }
        return String(name.dropLast(ext.count))
    }

    /// `.vtt`, `.srt`, `.json`, `.html`, `.txt` by type, else by the URL,
    /// else `.transcript`.
    private static func transcriptSuffix(_ transcript: ParsedTranscript) -> String {
        if let type = transcript.type {
            let essence = type.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            if let known = transcriptSuffixes[essence.lowercased().filter { !$0.isWhitespace }] { return known }
        }
        let ext = urlExtension(transcript.url)
        return transcriptURLSuffixes.contains(ext) ? "." + ext : ".transcript"
    }

    /// The cover's extension from its URL (`.jpg` when it says nothing).
    private static func imageExtension(_ url: String) -> String {
        imageExtensions[urlExtension(url)] ?? ".jpg"
    }

    /// The lowercased extension of a URL's last path segment, or "".
    private static func urlExtension(_ url: String) -> String {
        var path = Substring(url)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        if let scheme = path.firstRange(of: "://") {
            let afterScheme = path[scheme.upperBound...]
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? ""
        }
        guard let last = path.split(separator: "/").last, let dot = last.lastIndex(of: ".") else { return "" }
        return last[last.index(after: dot)...].lowercased()
    }

    /// A language tag safe inside a file name (letters, digits, dashes).
    private static func languageTag(_ language: String?) -> String? {
        guard let language else { return nil }
        let tag = String(language.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }.prefix(20))
        return tag.isEmpty || tag.hasPrefix("-") ? nil : tag
    }

    /// A title on one line: control characters and line breaks become
    /// spaces, runs collapse, ends trimmed; `nil` when nothing is left.
    static func oneLine(_ title: String?) -> String? {
        guard let title else { return nil }
        var scalars = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in title.unicodeScalars {
            // ASCII answered without Unicode's property tables (a thousand
            // shows' titles: 2 % of a mount's CPU went to that lookup).
            let blank =
                scalar.value < 0x80
                ? scalar.value <= 0x20 || scalar.value == 0x7F
                : scalar.value <= 0x9F || scalar.properties.isWhitespace
            if blank {
                pendingSpace = true
                continue
            }
            if pendingSpace, !scalars.isEmpty { scalars.append(" ") }
            pendingSpace = false
            scalars.append(scalar)
        }
        return scalars.isEmpty ? nil : String(scalars)
    }
}
