public import FUSEBridge
public import Feeds
public import Logging
public import RangeCache

/// The tree a mount shows: the root, one directory per feed, one read-only
/// file per episode.
///
/// Inode numbers come from the index's row ids, so they are the same on
/// every mount of the same cache; names follow DESIGN.md (see `Naming`).
public final class Catalog: Sendable {
    // MARK: - Nested types

    /// A show directory.
    public struct Show: Sendable {
        public let inode: UInt64
        public let name: String
        public let feedURL: String
        public let modificationTime: Int64
        /// Episodes in listing order, and the same by name.
        public let episodes: [Episode]
        let byName: [String: Episode]
    }

    /// What an inode is.
    public enum Node: Sendable {
        case root
        case show(Show)
        case episode(Episode)
    }

    // MARK: - Properties

    public static let rootInode: UInt64 = 1
    public let shows: [Show]
    private let showsByName: [String: Show]
    private let nodes: [UInt64: Node]

    // MARK: - Init

    /// Builds the tree for parsed feeds (in SOURCE order), registering every
    /// episode in the index so its inode is stable.
    public init(feeds: [(url: String, feed: ParsedFeed)], index: CacheIndex, logger: Logger) throws {
        let directoryNames = Naming.directoryNames(feeds.map { $0.feed.title })
        var shows: [Show] = []
        var nodes: [UInt64: Node] = [Catalog.rootInode: .root]
        for (position, entry) in feeds.enumerated() {
            let feed = entry.feed
            let items = Catalog.layout(feedURL: entry.url, feed: feed, logger: logger)
            let registered = try index.register(
                feedURL: entry.url, episodes: items.map { (key: $0.key, url: $0.parsed.enclosureURL) })
            let showInode = (UInt64(1) << 40) | UInt64(registered.feedID)
            var episodes: [Episode] = []
            var byName: [String: Episode] = [:]
            for (item, record) in zip(items, registered.records) {
                let (parsed, key, name) = (item.parsed, item.key, item.name)
                let episode = Episode(
                    inode: (UInt64(2) << 40) | UInt64(record.id), parent: showInode, key: key,
                    url: parsed.enclosureURL, guid: parsed.guid, name: name,
                    modificationTime: parsed.published ?? feed.lastBuildDate ?? 0,
                    feedLength: parsed.enclosureLength, record: record)
                episodes.append(episode)
                byName[name] = episode
                nodes[episode.inode] = .episode(episode)
            }
            let newest = items.compactMap(\.parsed.published).max()
            let show = Show(
                inode: showInode, name: directoryNames[position], feedURL: entry.url,
                modificationTime: feed.lastBuildDate ?? newest ?? 0, episodes: episodes, byName: byName)
            shows.append(show)
            nodes[showInode] = .show(show)
        }
        self.shows = shows
        self.showsByName = Dictionary(shows.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.nodes = nodes
        logger.info(
            "catalogue ready",
            metadata: ["feeds": "\(shows.count)", "episodes": "\(shows.reduce(0) { $0 + $1.episodes.count })"])
    }

    // MARK: - Methods

    /// A feed's episodes as the mount shows them: each with its cache key
    /// and file name, duplicates left out. Shared by the mount and
    /// `podfs status`, so both name the same file the same way.
    public static func layout(
        feedURL: String, feed: ParsedFeed, logger: Logger
    ) -> [(parsed: ParsedEpisode, key: String, name: String)] {
        // Two items with the same identity (it happens: copied items) would
        // share a cache file; keep the first, or tell them apart by their
        // enclosure when that differs.
        var seen = Set<String>()
        var items: [(parsed: ParsedEpisode, key: String)] = []
        for parsed in feed.episodes {
            var key = CacheIndex.episodeKey(feedURL: feedURL, identity: parsed.identity)
            if seen.contains(key) {
                key = CacheIndex.episodeKey(feedURL: feedURL, identity: parsed.identity + "\n" + parsed.enclosureURL)
                if seen.contains(key) {
                    logger.notice(
                        "skipping a duplicate episode", metadata: ["feed.url": "\(feedURL)", "episode.title": "\(parsed.title)"])
                    continue
                }
            }
            seen.insert(key)
            items.append((parsed, key))
        }
        let names = Naming.episodeNames(items.map {
            Naming.EpisodeNameInput(
                title: $0.parsed.title, published: $0.parsed.published, mimeType: $0.parsed.enclosureType,
                url: $0.parsed.enclosureURL)
        })
        return zip(items, names).map { (parsed: $0.0.parsed, key: $0.0.key, name: $0.1) }
    }

    public func node(_ inode: UInt64) -> Node? {
        nodes[inode]
    }

    public func lookup(parent: UInt64, name: String) -> Node? {
        switch nodes[parent] {
        case .root: return showsByName[name].map { .show($0) }
        case .show(let show): return show.byName[name].map { .episode($0) }
        case .episode, nil: return nil
        }
    }

    public func children(of inode: UInt64) -> [DirectoryEntry]? {
        switch nodes[inode] {
        case .root:
            return shows.map { DirectoryEntry(name: $0.name, inode: $0.inode, kind: .directory) }
        case .show(let show):
            return show.episodes.map { DirectoryEntry(name: $0.name, inode: $0.inode, kind: .regularFile) }
        case .episode, nil:
            return nil
        }
    }

    public var episodeCount: Int {
        shows.reduce(0) { $0 + $1.episodes.count }
    }
}
