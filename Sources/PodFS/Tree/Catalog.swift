public import FUSEBridge
import Foundation
public import Feeds
public import Logging
public import RangeCache
import Locking
import ReadRules

/// The tree a mount shows: the root, one directory per feed, in it one
/// read-only file per episode, the show's cover, the episodes' transcripts
/// and chapters, and a playlist.
///
/// Inode numbers come from the index's row ids, so they are the same on
/// every mount of the same cache; names follow docs/DESIGN.md, "File
/// names" (see `Naming` and `ShowLayout`). A refresh swaps a show's
/// listing in one step: a file that stays keeps its name, its inode and its
/// `Episode` (with the reader's state); a file that leaves the feed leaves
/// the listing but its inode stays readable for the rest of the mount, so
/// open files keep working.
public final class Catalog: Sendable {
    // MARK: - Nested types

    /// A show directory. A class, so a `Node` holding one stays a word
    /// wide: the tree holds a node per file, twice.
    public final class Show: Sendable {
        public let inode: UInt64
        public let name: String
        public let feedURL: String
        /// The scope of its files' keys, kept for the rest of the mount.
        public let scope: CacheScope
        public let modificationTime: Int64
        /// Episodes in listing order.
        public let episodes: [Episode]
        /// Cover, transcripts and chapters, in listing order.
        public let extras: [Episode]
        /// The cover among `extras`, if the feed names one.
        public let cover: Episode?
        public let playlist: Playlist
        /// What it adds to the root's `Latest.m3u` (`LatestPlaylist`).
        let latest: [LatestPlaylist.Entry]
        /// Every entry of the directory by name.
        let byName: [String: Node]
        /// Cache key to name, for the next refresh to keep.
        let names: [String: String]
        /// What its listing is (`Catalog.listingSignature`): a change moves
        /// its time (`folderTime`).
        let listing: UInt64

        init(
            inode: UInt64, name: String, feedURL: String, scope: CacheScope, modificationTime: Int64,
            episodes: [Episode], extras: [Episode], cover: Episode?, playlist: Playlist,
            latest: [LatestPlaylist.Entry], byName: [String: Node], names: [String: String], listing: UInt64
        ) {
            self.inode = inode
            self.name = name
            self.feedURL = feedURL
            self.scope = scope
            self.modificationTime = modificationTime
            self.episodes = episodes
            self.extras = extras
            self.cover = cover
            self.playlist = playlist
            self.latest = latest
            self.byName = byName
            self.names = names
            self.listing = listing
        }

        /// The directory's entries in listing order: its episodes, then
        /// their transcripts, chapters and the cover, then the playlist.
        /// Made when a listing is opened rather than kept for every show
        /// (a hundred bytes a file: 20 MiB for a thousand shows).
        var entries: [DirectoryEntry] {
            var entries: [DirectoryEntry] = []
            entries.reserveCapacity(episodes.count + extras.count + 1)
            for file in episodes + extras {
                entries.append(DirectoryEntry(name: names[file.key] ?? file.name, inode: file.inode, kind: .regularFile))
            }
            entries.append(DirectoryEntry(name: playlist.name, inode: playlist.inode, kind: .regularFile))
            return entries
        }
    }

    /// What an inode is.
    public enum Node: Sendable {
        case root
        case show(Show)
        case episode(Episode)
        case playlist(Playlist)
    }

    /// What a refresh changed in one show directory, for the kernel's caches.
    public struct Change: Sendable {
        public var showInode: UInt64
        public var showName: String
        /// The show was not in the tree before (it failed at mount time).
        public var isNewShow: Bool
        public var addedNames: [String]
        public var removedNames: [String]
        /// Whether the directory's attributes or the playlist changed.
        public var playlistChanged: Bool
        public var playlistInode: UInt64
        /// Files the reader has not seen yet.
        public var newFiles: [Episode]
        /// Files whose feed now gives another link, date or length.
        public var renewed: [Renewal] = []
        /// Some file the feed moved to another file is read: not renewed
        /// yet (`makeShow`).
        public var renewalsDeferred = false
        /// Whether the root's `Latest.m3u` changed.
        public var latestChanged = false

        /// Whether anything at all changed.
        public var isEmpty: Bool {
            !isNewShow && addedNames.isEmpty && removedNames.isEmpty && !playlistChanged && !latestChanged
                && renewed.isEmpty
        }
    }

    /// A listed file whose feed now says another enclosure URL, date or
    /// length for it: the same file (name, inode, read state), as a new
    /// `Episode` with what the feed says now, which the tree lists from
    /// then on. Files open keep the object they opened.
    public struct Renewal: Sendable {
        public var before: Episode
        public var after: Episode

        /// Its enclosure is at another path, not merely another query: another file.
        public var enclosureMoved: Bool {
            CacheIndex.pathsDiffer(before.url, after.url)
        }
    }

    /// The whole tree, swapped as one value. Guarded by `tree`'s lock.
    struct Tree {
        /// Every change makes `Latest.m3u` again (`Catalog+Latest`).
        var shows: [Show] = [] {
            didSet { refreshLatest(now: Catalog.wallClock()) }
        }
        var showsByName: [String: Show] = [:]
        /// The shows by feed URL: a feed's round asks the tree whether it
        /// is listed, and a thousand feeds asked it of a thousand shows one
        /// by one, under the tree's lock.
        var showsByURL: [String: Show] = [:]
        /// Every node served in this mount, files that left their feed
        /// included (they stay readable while open).
        var nodes: [UInt64: Node] = [
            Catalog.rootInode: .root, Catalog.latestPlaylistInode: .playlist(Catalog.emptyLatestPlaylist),
        ]
        /// Every file's `Episode` by cache key, for reuse across refreshes.
        var filesByKey: [String: Episode] = [:]
        /// Shows known from the last mount and not built yet, by feed URL
        /// (`Catalog+Placeholders`).
        var placeholders: [String: Placeholder] = [:]
        var placeholdersByName: [String: Placeholder] = [:]
        var placeholdersByInode: [UInt64: Placeholder] = [:]
        /// Feed URLs in the order the root lists them, while placeholders
        /// exist (a show built from one keeps its place); empty otherwise.
        var rootOrder: [String] = []
        /// Normalised `podcast:guid` to the feed URL whose keys are scoped
        /// by it in this mount: the first subscription to claim it
        /// (`scope(url:feed:)`).
        var guidClaims: [String: String] = [:]
        /// Feed URLs refused a guid another subscription holds, logged once.
        var guidRefusals: Set<String> = []
        /// Whether a folder new to the root may not take `name`: a show or
        /// a placeholder has it, a show being built was given it, or it is
        /// one of the root's own files.
        func isNameTaken(_ name: String) -> Bool {
            showsByName[name] != nil || placeholdersByName[name] != nil || beingBuilt.values.contains(name)
                || Catalog.reservedRootNames.contains(Array(name.utf8))
        }

        /// Lists a placeholder (the caller checked it is new to the root).
        mutating func insert(_ placeholder: Placeholder) {
            placeholders[placeholder.url] = placeholder
            placeholdersByName[placeholder.name] = placeholder
            placeholdersByInode[placeholder.inode] = placeholder
            rootOrder.append(placeholder.url)
        }

        /// Takes the placeholder of `url` out of the tree's indexes (the
        /// caller sees to `rootOrder`); what it added to `Latest.m3u` leaves
        /// it, unless `refreshingLatest` is false (a show takes its place).
        @discardableResult
        mutating func removePlaceholder(url: String, refreshingLatest: Bool = true) -> Placeholder? {
            guard let placeholder = placeholders.removeValue(forKey: url) else { return nil }
            placeholdersByName[placeholder.name] = nil
            placeholdersByInode[placeholder.inode] = nil
            if refreshingLatest, placeholder.latest?.isEmpty == false { refreshLatest(now: Catalog.wallClock()) }
            return placeholder
        }

        /// When a show last came into the root or left it in this mount
        /// (seconds since the epoch): the root's time is at least this.
        var rootChangedAt: Int64 = 0
        /// Feeds unsubscribed in this mount: `add` (kept copies, the
        /// placeholders' builds) never brings one back; only `update` (a
        /// subscription again, or a refresh, which checks the list) does.
        var removed: Set<String> = []
        /// Shows new to the root being built (by `add` or a batch of
        /// updates) and not installed yet: feed URL to the name given. A
        /// show listed on arrival (`listArrived`) takes none of these names,
        /// and is not listed while its feed's show is being built.
        var beingBuilt: [String: String] = [:]

        /// When the tree was made (the mount's start).
        let madeAt = Catalog.wallClock()
        /// The root folder's time: its newest show's, listed or built, and
        /// at least `rootChangedAt`; when the tree was made while it lists
        /// nothing (not 1970).
        var rootTime: Int64 {
            let time = max(
                shows.map(\.modificationTime).max() ?? 0, placeholders.values.map(\.modificationTime).max() ?? 0,
                rootChangedAt)
            return time > 0 ? time : madeAt
        }
    }

    // MARK: - Properties

    public static let rootInode: UInt64 = 1

    let index: CacheIndex
    let logger: Logger
    let tree = Locked(Tree())
    /// Builds the shows of placeholders on demand (set by the mount).
    let builder = Locked<(@Sendable (_ urls: [String]) -> Void)?>(nil)
    /// Held by `update` from start to end: one refresh at a time may read,
    /// rebuild and swap the tree.
    let updating = Locked(0)
    /// Updates that land together, carried out together (`Catalog+Updating`).
    let updates = GroupCommit<Update, Change>()

    // MARK: - Init

    /// Builds the tree for parsed feeds (in SOURCE order), registering every
    /// file in the index so its inode is stable.
    public init(feeds: [(url: String, feed: ParsedFeed)], index: CacheIndex, logger: Logger) throws {
        self.index = index
        self.logger = logger
        try add(feeds)
        // `Latest.m3u` with no show in it has the root's time (with shows,
        // `add` made it, and this makes nothing).
        tree.withLock { $0.refreshLatest(now: Catalog.wallClock()) }
    }

    // MARK: - Reading

    /// The shows in listing order.
    public var shows: [Show] {
        tree.withLock { $0.shows }
    }

    /// The root folder's time: its newest show's, listed or built, and at
    /// least when a show last came into it or left it in this mount.
    public var rootModificationTime: Int64 {
        tree.withLock { $0.rootTime }
    }

    /// The feed URLs that have a directory.
    public var feedURLs: Set<String> {
        Set(tree.withLock { $0.shows.map(\.feedURL) })
    }

    /// Show folders in the root, built or listed as placeholders.
    public var showFolderCount: Int {
        tree.withLock { $0.shows.count + $0.placeholders.count }
    }

    public var episodeCount: Int {
        tree.withLock { $0.shows.reduce(0) { $0 + $1.episodes.count } }
    }

    public func node(_ inode: UInt64) -> Node? {
        if let node = builtNode(inode) { return node }
        guard let url = tree.withLock({ $0.placeholdersByInode[inode]?.url }) else { return nil }
        build(url: url)
        return tree.withLock { $0.nodes[inode] }
    }

    /// The node of `inode` if it is built; never builds a placeholder's show.
    func builtNode(_ inode: UInt64) -> Node? {
        tree.withLock { $0.nodes[inode] }
    }

    public func lookup(parent: UInt64, name: String) -> Node? {
        tree.withLock { tree in
            switch tree.nodes[parent] {
            case .root:
                if name == LatestPlaylist.name { return .playlist(tree.latest) }
                return tree.showsByName[name].map { .show($0) }
            case .show(let show): return show.byName[name]
            case .episode, .playlist, nil: return nil
            }
        } ?? lookupPlaceholder(parent: parent, name: name)
    }

    public func children(of inode: UInt64) -> [DirectoryEntry]? {
        if tree.withLock({ $0.nodes[inode] == nil }), let url = tree.withLock({ $0.placeholdersByInode[inode]?.url }) {
            build(url: url)
        }
        let listed = tree.withLock { tree -> (root: [DirectoryEntry]?, show: Show?) in
            switch tree.nodes[inode] {
            case .root: (Self.rootEntries(tree) + [tree.latestEntry], nil)
            case .show(let show): (nil, show)
            case .episode, .playlist, nil: (nil, nil)
            }
        }
        // A show's entries are made outside the tree's lock.
        return listed.root ?? listed.show?.entries
    }

    // MARK: - Layout for `podfs status`

    /// A feed's episodes as the mount shows them: each with its cache key
    /// and file name, duplicates left out. Shared by the mount and
    /// `podfs status`, so both name the same file the same way.
    public static func layout(
        feedURL: String, feed: ParsedFeed, logger: Logger
    ) -> [(parsed: ParsedEpisode, key: String, name: String)] {
        ShowLayout(feedURL: feedURL, feed: feed, directoryName: feed.title ?? "", logger: logger).episodes
            .compactMap { item in item.episode.map { (parsed: $0, key: item.key, name: item.name) } }
    }

    // MARK: - Inode numbers and times

    /// The kinds of node whose inode numbers come from index ids; 0 is
    /// the fixed nodes' (the root, `ControlFiles`).
    enum InodeKind: UInt64 {
        case show = 1, episode = 2, playlist = 3
    }

    /// The inode of an index id: the kind in the two lowest bits, the id
    /// above them. Programs keep inode numbers in 32 bits (MPD, 32-bit
    /// builds, an `unsigned st_ino`): for every id below 2^30 the low 32
    /// bits differ from every other node's, the root's (1) included, and
    /// they stay the same across mounts (ids are the index's). A damaged
    /// index may hold any id; a negative or huge one gives a wrong number,
    /// never a trap.
    static func inode(_ kind: InodeKind, id: Int64) -> UInt64 {
        (UInt64(truncatingIfNeeded: id) << 2) | kind.rawValue
    }

    /// A feed's own time: its last build date, else its newest episode's.
    static func feedTime(_ feed: ParsedFeed) -> Int64 {
        feed.lastBuildDate ?? feed.episodes.compactMap(\.published).max() ?? 0
    }

    /// The time a show folder shows: its feed's (the last build date, else
    /// its newest episode's). Scanners (MPD, Navidrome, Jellyfin's
    /// scheduled scans) skip a folder whose time did not change, so when
    /// its listing changed (`listing`, against what was shown `before`, in
    /// this mount or the last one's `shows.json`) and that time did not
    /// move past the one shown, it is `now`: an episode back-filled with
    /// an old date, or one removed. A listing that did not change keeps
    /// the time shown before, a moved one included.
    static func folderTime(
        feedTime: Int64, listing: UInt64, before: (time: Int64, listing: UInt64?)?, now: Int64
    ) -> Int64 {
        guard let before else { return feedTime }
        guard let previous = before.listing, previous != listing else { return max(feedTime, before.time) }
        return feedTime > before.time ? feedTime : max(now, before.time.saturatingAdding(1))
    }

    /// A listing's signature: the sum of each name's FNV-1a (the name's
    /// bytes and a 0), so the order of the names does not count and
    /// nothing is sorted or copied; the same in every process (Swift's
    /// `Hasher` is seeded per process).
    static func listingSignature<Names: Sequence<String>>(_ names: Names) -> UInt64 {
        var signature: UInt64 = 0
        for name in names {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in name.utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            signature &+= hash &* 0x0000_0100_0000_01b3
        }
        return signature
    }

    /// Seconds since the epoch.
    static func wallClock() -> Int64 {
        Int64(Date().timeIntervalSince1970)
    }

    /// The inode an earlier podfs gave a show (`1 << 40` and up, kept in
    /// `shows.json`), as this one numbers it; other numbers unchanged.
    public static func currentInode(ofSaved inode: UInt64) -> UInt64 {
        guard inode >> 40 == InodeKind.show.rawValue else { return inode }
        return Self.inode(.show, id: Int64(inode & ((1 << 40) - 1)))
    }
}
