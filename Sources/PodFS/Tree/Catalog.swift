import Dispatch
public import FUSEBridge
import Foundation
public import Feeds
public import Logging
public import RangeCache
import Locking

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
        public let playlist: Playlist
        /// Every entry of the directory by name.
        let byName: [String: Node]
        /// The directory's entries in listing order.
        let entries: [DirectoryEntry]
        /// Cache key to name, for the next refresh to keep.
        let names: [String: String]
        /// What its listing is (`Catalog.listingSignature`): a change moves
        /// its time (`folderTime`).
        let listing: UInt64

        init(
            inode: UInt64, name: String, feedURL: String, scope: CacheScope, modificationTime: Int64,
            episodes: [Episode], extras: [Episode], playlist: Playlist, byName: [String: Node],
            entries: [DirectoryEntry], names: [String: String], listing: UInt64
        ) {
            self.inode = inode
            self.name = name
            self.feedURL = feedURL
            self.scope = scope
            self.modificationTime = modificationTime
            self.episodes = episodes
            self.extras = extras
            self.playlist = playlist
            self.byName = byName
            self.entries = entries
            self.names = names
            self.listing = listing
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

        /// Whether anything at all changed.
        public var isEmpty: Bool {
            !isNewShow && addedNames.isEmpty && removedNames.isEmpty && !playlistChanged
        }
    }

    /// The whole tree, swapped as one value. Guarded by `tree`'s lock.
    struct Tree {
        var shows: [Show] = []
        var showsByName: [String: Show] = [:]
        /// Every node served in this mount, files that left their feed
        /// included (they stay readable while open).
        var nodes: [UInt64: Node] = [Catalog.rootInode: .root]
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
        /// When a show last came into the root or left it in this mount
        /// (seconds since the epoch): the root's time is at least this.
        var rootChangedAt: Int64 = 0
    }

    // MARK: - Properties

    public static let rootInode: UInt64 = 1

    let index: CacheIndex
    let logger: Logger
    let tree = Locked(Tree())
    /// Builds the shows of placeholders on demand (set by the mount).
    let builder = Locked<(@Sendable (_ url: String) -> Void)?>(nil)
    /// Held by `update` from start to end: one refresh at a time may read,
    /// rebuild and swap the tree.
    let updating = Locked(0)

    // MARK: - Init

    /// Builds the tree for parsed feeds (in SOURCE order), registering every
    /// file in the index so its inode is stable.
    public init(feeds: [(url: String, feed: ParsedFeed)], index: CacheIndex, logger: Logger) throws {
        self.index = index
        self.logger = logger
        try add(feeds)
    }

    // MARK: - Adding shows

    /// Adds the directories of feeds the tree does not have yet (in order;
    /// feeds it has are left out): laid out on a few threads, registered in
    /// one transaction, installed in one step. A mount adds its kept copies
    /// a batch at a time, so it never holds them all parsed at once.
    /// Returns the shows added (their files are new to the reader).
    @discardableResult
    public func add(_ feeds: [(url: String, feed: ParsedFeed)]) throws -> [Show] {
        try updating.withLock { _ in
            let (present, existing) = tree.withLock { tree in
                (Set(tree.shows.map(\.feedURL)), Set(tree.shows.map { Array($0.name.utf8) }))
            }
            var seen = present
            let feeds = feeds.filter { seen.insert($0.url).inserted }
            let placeholders = tree.withLock { $0.placeholders }
            var taken = existing.union(placeholders.values.map { Array($0.name.utf8) })
            // A show built from a placeholder keeps the name it was listed with.
            let names = feeds.map {
                placeholders[$0.url]?.name
                    ?? Naming.uniqueName(stem: Naming.sanitize($0.feed.title), suffix: "", taken: &taken)
            }
            // In SOURCE order, so the first of two subscriptions with one
            // guid keeps it.
            let scopes = feeds.map { scope(url: $0.url, feed: $0.feed) }
            let layouts = Self.layouts(
                feeds.indices.map { (scope: scopes[$0], feed: feeds[$0].feed, name: names[$0]) }, logger: logger)
            // Every file of a new show is new: all are registered in one
            // transaction.
            let registered = try index.register(
                feeds: feeds.indices.map { position in
                    (feedURL: feeds[position].url, episodes: layouts[position].files.map { (key: $0.key, url: $0.url) })
                },
                formerKeys: Self.formerKeys(layouts.flatMap(\.files)))
            var shows: [Show] = []
            for (position, entry) in feeds.enumerated() {
                let placeholder = placeholders[entry.url]
                let (show, _) = try Self.makeShow(
                    url: entry.url, feed: entry.feed, layout: layouts[position], name: names[position],
                    previous: nil, shownBefore: placeholder.map { (time: $0.modificationTime, listing: $0.listing) },
                    known: { _ in nil }, register: { _, _ in registered[position] })
                shows.append(show)
            }
            tree.withLock { tree in
                for show in shows { Self.install(show, replacing: nil, into: &tree) }
                // A show the last mount did not list is new to the root.
                if shows.contains(where: { placeholders[$0.feedURL] == nil }) { tree.rootChangedAt = Self.wallClock() }
            }
            return shows
        }
    }

    // MARK: - Reading

    /// The shows in listing order.
    public var shows: [Show] {
        tree.withLock { $0.shows }
    }

    /// The root folder's time: its newest show's, listed or built, and at
    /// least when a show last came into it or left it in this mount.
    public var rootModificationTime: Int64 {
        tree.withLock { tree in
            max(
                tree.shows.map(\.modificationTime).max() ?? 0,
                tree.placeholders.values.map(\.modificationTime).max() ?? 0, tree.rootChangedAt)
        }
    }

    /// The feed URLs that have a directory.
    public var feedURLs: Set<String> {
        Set(tree.withLock { $0.shows.map(\.feedURL) })
    }

    public var episodeCount: Int {
        tree.withLock { $0.shows.reduce(0) { $0 + $1.episodes.count } }
    }

    public func node(_ inode: UInt64) -> Node? {
        if let node = tree.withLock({ $0.nodes[inode] }) { return node }
        guard let url = tree.withLock({ $0.placeholdersByInode[inode]?.url }) else { return nil }
        build(url: url)
        return tree.withLock { $0.nodes[inode] }
    }

    public func lookup(parent: UInt64, name: String) -> Node? {
        tree.withLock { tree in
            switch tree.nodes[parent] {
            case .root: return tree.showsByName[name].map { .show($0) }
            case .show(let show): return show.byName[name]
            case .episode, .playlist, nil: return nil
            }
        } ?? lookupPlaceholder(parent: parent, name: name)
    }

    public func children(of inode: UInt64) -> [DirectoryEntry]? {
        if tree.withLock({ $0.nodes[inode] == nil }), let url = tree.withLock({ $0.placeholdersByInode[inode]?.url }) {
            build(url: url)
        }
        return tree.withLock { tree in
            switch tree.nodes[inode] {
            case .root:
                return Self.rootEntries(tree)
            case .show(let show):
                return show.entries
            case .episode, .playlist, nil:
                return nil
            }
        }
    }

    // MARK: - Refresh

    /// Replaces the listing of the feed at `url` with `feed` (or adds its
    /// directory when it had none). Files still in the feed keep their
    /// names, inodes and state; new ones are registered in the index.
    /// Returns what changed, for the kernel's caches and the reader.
    public func update(url: String, feed: ParsedFeed) throws -> Change {
        // The layout (names for every file) is the costly part: it is made
        // before taking `updating`, so feeds that land together lay out in
        // parallel. Only one round fetches a feed at a time, so the show's
        // previous names cannot change meanwhile; a new show's name can
        // (another show may take it), and then the layout is made again.
        let (before, provisional) = tree.withLock { tree in
            (tree.shows.first { $0.feedURL == url }, Naming.sanitize(feed.title))
        }
        // A show keeps its scope for the mount: its files' keys are what the
        // reader and open files use (a feed that gains a guid is moved to
        // it by the next mount).
        let scope = before?.scope ?? scope(url: url, feed: feed)
        var layout = ShowLayout(
            scope: scope, feed: feed, directoryName: before?.name ?? provisional,
            previousNames: before?.names ?? [:], logger: logger)
        return try updating.withLock { _ in
            // No copy of the tree is held while it is changed: a copy would
            // make every update of a large mount copy every node.
            let (previous, taken, placeholder) = tree.withLock { tree in
                (
                    tree.shows.first { $0.feedURL == url },
                    Set(tree.shows.map { Array($0.name.utf8) } + tree.placeholders.values.map { Array($0.name.utf8) }),
                    tree.placeholders[url]
                )
            }
            let name: String
            if let previous {
                name = previous.name
            } else if let placeholder {
                name = placeholder.name
            } else {
                var taken = taken
                name = Naming.uniqueName(stem: Naming.sanitize(feed.title), suffix: "", taken: &taken)
            }
            if name != (before?.name ?? provisional) || previous?.inode != before?.inode {
                layout = ShowLayout(
                    scope: previous?.scope ?? scope, feed: feed, directoryName: name,
                    previousNames: previous?.names ?? [:], logger: logger)
            }
            let shownBefore =
                previous.map { (time: $0.modificationTime, listing: Optional($0.listing)) }
                ?? placeholder.map { (time: $0.modificationTime, listing: $0.listing) }
            let (show, newFiles) = try Self.makeShow(
                url: url, feed: feed, layout: layout, name: name, previous: previous, shownBefore: shownBefore,
                known: { key in self.tree.withLock { $0.filesByKey[key] } },
                register: { [index] in try index.register(feedURL: url, episodes: $0, formerKeys: $1) })
            tree.withLock { tree in
                Self.install(show, replacing: previous, into: &tree)
                if previous == nil, placeholder == nil { tree.rootChangedAt = Self.wallClock() }
            }
            let before = Set(previous?.byName.keys.map { $0 } ?? [])
            let after = Set(show.byName.keys)
            return Change(
                showInode: show.inode, showName: show.name, isNewShow: previous == nil,
                addedNames: after.subtracting(before).sorted(), removedNames: before.subtracting(after).sorted(),
                playlistChanged: previous.map { $0.playlist !== show.playlist || $0.modificationTime != show.modificationTime }
                    ?? true,
                playlistInode: show.playlist.inode, newFiles: newFiles)
        }
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

    // MARK: - Private methods

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

    /// A show directory for `feed`: reuses the `Episode` of every file
    /// the tree already has, registers the others.
    private static func makeShow(
        url: String, feed: ParsedFeed, layout: ShowLayout, name: String, previous: Show?,
        shownBefore: (time: Int64, listing: UInt64?)?, known: (String) -> Episode?,
        register: (_ episodes: [(key: String, url: String)], _ formerKeys: [String: String]) throws -> (
            feedID: Int64, records: [EpisodeRecord]
        )
    ) throws -> (Show, newFiles: [Episode]) {
        let files = layout.files
        let reused = Dictionary(
            files.compactMap { item in known(item.key).map { (item.key, $0) } }, uniquingKeysWith: { first, _ in first })
        let missing = files.filter { reused[$0.key] == nil }
        let registered = try register(missing.map { (key: $0.key, url: $0.url) }, formerKeys(missing))
        let records = Dictionary(zip(missing.map(\.key), registered.records), uniquingKeysWith: { first, _ in first })
        let showInode = Self.inode(.show, id: registered.feedID)
        let newest = feed.episodes.compactMap(\.published).max()
        let feedTime = feed.lastBuildDate ?? newest ?? 0
        let listing =
            Self.listingSignature(files.lazy.map(\.name)) &+ Self.listingSignature(CollectionOfOne(layout.playlistName))
        let showTime = Self.folderTime(feedTime: feedTime, listing: listing, before: shownBefore, now: Self.wallClock())
        // Sized once: appends would leave up to twice the room each array
        // needs for the rest of the mount.
        var newFiles: [Episode] = []
        newFiles.reserveCapacity(missing.count)
        var episodes: [Episode] = []
        episodes.reserveCapacity(files.count)
        var extras: [Episode] = []
        for item in files {
            let episode: Episode
            if let known = reused[item.key] {
                episode = known
            } else {
                let record = records[item.key]
                let time = item.kind == .cover ? showTime : item.episode?.published ?? feed.lastBuildDate ?? 0
                episode = Episode(
                    inode: Self.inode(.episode, id: record?.id ?? 0), parent: showInode, key: item.key,
                    url: item.url, guid: item.kind == .episode ? item.episode?.guid : nil, name: item.name,
                    modificationTime: time,
                    feedLength: item.kind == .episode ? item.episode?.enclosureLength : nil,
                    isEpisode: item.kind == .episode, record: record)
                newFiles.append(episode)
            }
            if item.kind == .episode { episodes.append(episode) } else { extras.append(episode) }
        }
        let content = layout.playlist()
        let playlist: Playlist
        if let old = previous?.playlist, old.content == content, old.modificationTime == showTime {
            playlist = old
        } else {
            playlist = Playlist(
                inode: Self.inode(.playlist, id: registered.feedID), name: layout.playlistName, content: content,
                modificationTime: showTime)
        }
        // Names come from the layout: a file reused from before keeps the
        // name the layout kept for it.
        var byName: [String: Node] = Dictionary(minimumCapacity: files.count + 1)
        var entries: [DirectoryEntry] = []
        entries.reserveCapacity(files.count + 1)
        for (item, episode) in zip(files, episodes + extras) {
            byName[item.name] = .episode(episode)
            entries.append(DirectoryEntry(name: item.name, inode: episode.inode, kind: .regularFile))
        }
        byName[playlist.name] = .playlist(playlist)
        entries.append(DirectoryEntry(name: playlist.name, inode: playlist.inode, kind: .regularFile))
        let show = Show(
            inode: showInode, name: name, feedURL: url, scope: layout.scope, modificationTime: showTime,
            episodes: episodes,
            extras: extras, playlist: playlist, byName: byName, entries: entries, names: layout.names, listing: listing)
        return (show, newFiles)
    }

    /// The scope of a show not yet in the tree: the feed's `podcast:guid`
    /// unless another subscription holds it in this mount (a duplicate in
    /// the SOURCE), which would make two folders share cache files; then
    /// its feed URL, and the log says so once.
    private func scope(url: String, feed: ParsedFeed) -> CacheScope {
        let wanted = CacheScope(feedURL: url, showGUID: feed.showGUID)
        guard let guid = wanted.guid else { return wanted }
        let (holder, firstRefusal) = tree.withLock { tree -> (String, Bool) in
            let holder = tree.guidClaims[guid, default: url]
            tree.guidClaims[guid] = holder
            return (holder, holder != url && tree.guidRefusals.insert(url).inserted)
        }
        guard holder != url else { return wanted }
        if firstRefusal {
            logger.info(
                "another subscription has this show's podcast:guid; its files are cached under its feed URL instead",
                metadata: ["feed.url": .url(url), "show.guid": "\(guid)", "guid.holder": .url(holder)])
        }
        return .feedURL(url)
    }

    /// New key to former key of every file that has one (`ShowLayout.Item
    /// .formerKey`), for the index to take over.
    private static func formerKeys(_ files: [ShowLayout.Item]) -> [String: String] {
        var keys: [String: String] = [:]
        for file in files {
            if let former = file.formerKey { keys[file.key] = former }
        }
        return keys
    }

    /// The layouts of `feeds`, made on a few threads.
    private static func layouts(
        _ feeds: [(scope: CacheScope, feed: ParsedFeed, name: String)], logger: Logger
    ) -> [ShowLayout] {
        let made = Locked<[Int: ShowLayout]>([:])
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, feeds.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for position in stride(from: worker, to: feeds.count, by: workers) {
                let entry = feeds[position]
                let layout = ShowLayout(scope: entry.scope, feed: entry.feed, directoryName: entry.name, logger: logger)
                made.withLock { $0[position] = layout }
            }
        }
        let byPosition = made.withLock { $0 }
        return feeds.indices.map { byPosition[$0]! }
    }

    /// Puts `show` in the tree in place of `previous` (or at the end).
    private static func install(_ show: Show, replacing previous: Show?, into tree: inout Tree) {
        if let placeholder = tree.placeholders.removeValue(forKey: show.feedURL) {
            tree.placeholdersByName[placeholder.name] = nil
            tree.placeholdersByInode[placeholder.inode] = nil
        }
        if !tree.rootOrder.isEmpty, previous == nil, !tree.rootOrder.contains(show.feedURL) {
            tree.rootOrder.append(show.feedURL)
        }
        if let previous, let position = tree.shows.firstIndex(where: { $0.inode == previous.inode }) {
            tree.shows[position] = show
        } else {
            tree.shows.append(show)
        }
        tree.showsByName[show.name] = show
        tree.nodes[show.inode] = .show(show)
        tree.nodes[show.playlist.inode] = .playlist(show.playlist)
        for episode in show.episodes + show.extras {
            tree.nodes[episode.inode] = .episode(episode)
            tree.filesByKey[episode.key] = episode
        }
    }
}
