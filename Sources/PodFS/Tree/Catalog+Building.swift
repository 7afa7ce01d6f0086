import Dispatch
import FUSEBridge
import Foundation
public import Feeds
import Locking
import Logging
import RangeCache

/// Shows built from parsed feeds and put in the tree: new ones (`add`; and
/// refreshed ones, `Catalog+Updating`).
///
/// A show is installed in one step, under `updating`: a file that stays
/// keeps its name, its inode and its `Episode`, and every file new to the
/// tree is registered in the index (its inode is its row id) before the
/// show that lists it is installed.
extension Catalog {
    // MARK: - Adding shows

    /// Adds the directories of feeds the tree does not have yet (in order;
    /// feeds it has are left out): laid out on a few threads, registered in
    /// one transaction, installed in one step. A mount adds its kept copies
    /// a batch at a time, so it never holds them all parsed at once.
    /// Returns the shows added (their files are new to the reader).
    @discardableResult
    public func add(_ feeds: [(url: String, feed: ParsedFeed)]) throws -> [Show] {
        try updating.withLock { _ in
            // One hold of the tree: the feeds it lacks, and their names
            // (a show built from a placeholder keeps the name it was listed
            // with), kept from shows listed on arrival until installed.
            let (feeds, placeholders, names) = tree.withLock { tree in
                var seen = tree.removed
                let feeds = feeds.filter { tree.showsByURL[$0.url] == nil && seen.insert($0.url).inserted }
                // The tree's indexes are asked, not a set of every name made
                // for each add (a show looked into is one add).
                var given = Set<String>()
                let names = feeds.map { entry -> String in
                    if let name = tree.placeholders[entry.url]?.name { return name }
                    let name = Naming.uniqueName(stem: Naming.sanitize(entry.feed.title), suffix: "") { [given] candidate in
                        given.contains(candidate) || tree.isNameTaken(candidate)
                    }
                    given.insert(name)
                    return name
                }
                for (feed, name) in zip(feeds, names) { tree.beingBuilt[feed.url] = name }
                return (feeds, tree.placeholders, names)
            }
            // Given back when installed, or when the registration fails.
            defer {
                tree.withLock { tree in
                    for feed in feeds { tree.beingBuilt[feed.url] = nil }
                }
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
                let (show, _, _, _) = Self.makeShow(
                    url: entry.url, feed: entry.feed, layout: layouts[position], name: names[position],
                    previous: nil, shownBefore: placeholder.map { (time: $0.modificationTime, listing: $0.listing) },
                    reused: [:], registered: registered[position])
                shows.append(show)
            }
            tree.withLock { tree in
                // A show the last mount did not list is new to the root
                // (first: installing makes `Latest.m3u` with the root's time).
                if shows.contains(where: { placeholders[$0.feedURL] == nil }) { tree.rootChangedAt = Self.wallClock() }
                for show in shows { Self.install(show, replacing: nil, into: &tree) }
            }
            return shows
        }
    }

    // MARK: - Internal methods

    /// A show directory for `feed`: reuses the `Episode` of every file in
    /// `reused` (by key); the others were registered (`registered`, in
    /// their order in the layout). `playlist`: the layout's, when it was
    /// made already.
    static func makeShow(
        url: String, feed: ParsedFeed, layout: ShowLayout, playlist content: [UInt8]? = nil,
        name: String, previous: Show?, shownBefore: (time: Int64, listing: UInt64?)?, reused: [String: Episode],
        registered: (feedID: Int64, records: [EpisodeRecord])
    ) -> (Show, newFiles: [Episode], renewed: [Renewal], deferred: Bool) {
        let files = layout.files
        let missing = files.filter { reused[$0.key] == nil }
        let records = Dictionary(zip(missing.map(\.key), registered.records), uniquingKeysWith: { first, _ in first })
        let showInode = Self.inode(.show, id: registered.feedID)
        let feedTime = Self.feedTime(feed)
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
        var cover: Episode?
        var renewed: [Renewal] = []
        var deferred = false
        let folder = Episode.Folder(inode: showInode, feedURL: url)
        for item in files {
            let episode: Episode
            let time = item.kind == .cover ? showTime : item.episode?.published ?? feed.lastBuildDate ?? 0
            let feedLength = item.kind == .episode ? item.episode?.enclosureLength : nil
            if let known = reused[item.key] {
                // The same file (name, inode, cached bytes); what its feed
                // now says of its link, date and length is taken. One that
                // moved to another file while a program reads it stays as
                // it is until a refresh finds it closed: a player reads on
                // in the file it opened. (The cache's own downloads give
                // way: `EpisodeReader.isMoving`.)
                let renewal = Renewal(
                    before: known, after: known.renewed(url: item.url, modificationTime: time, feedLength: feedLength))
                if renewal.after === known {
                    episode = known
                } else if renewal.enclosureMoved && known.isOpenByAReader {
                    deferred = true
                    episode = known
                } else {
                    episode = renewal.after
                    renewed.append(renewal)
                }
            } else {
                let record = records[item.key]
                episode = Episode(
                    inode: Self.inode(.episode, id: record?.id ?? 0), folder: folder, key: item.key,
                    url: item.url, guid: item.kind == .episode ? item.episode?.guid : nil, name: item.name,
                    modificationTime: time, feedLength: feedLength,
                    isEpisode: item.kind == .episode, record: record)
                newFiles.append(episode)
            }
            if item.kind == .episode { episodes.append(episode) } else { extras.append(episode) }
            if item.kind == .cover { cover = episode }
        }
        let content = content ?? layout.playlist()
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
        for (item, episode) in zip(files, episodes + extras) {
            byName[item.name] = .episode(episode)
        }
        byName[playlist.name] = .playlist(playlist)
        let show = Show(
            inode: showInode, name: name, feedURL: url, scope: layout.scope, modificationTime: showTime,
            episodes: episodes, extras: extras, cover: cover, playlist: playlist,
            latest: LatestPlaylist.entries(of: layout.episodes, now: Self.wallClock()), byName: byName,
            names: layout.names, listing: listing)
        return (show, newFiles, renewed, deferred)
    }

    /// The scope of a show not yet in the tree: the feed's `podcast:guid`
    /// unless another subscription holds it in this mount (a duplicate in
    /// the SOURCE), which would make two folders share cache files; then
    /// its feed URL, and the log says so once.
    func scope(url: String, feed: ParsedFeed) -> CacheScope {
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
    static func formerKeys(_ files: [ShowLayout.Item]) -> [String: String] {
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
    static func install(_ show: Show, replacing previous: Show?, into tree: inout Tree) {
        // The playlist of the newest is made again when the show comes in.
        let placeholder = tree.removePlaceholder(url: show.feedURL, refreshingLatest: false)
        // The root's order names every show and placeholder: a show built
        // from a placeholder keeps its place; a new one goes last.
        if !tree.rootOrder.isEmpty, previous == nil, placeholder == nil {
            assert(!tree.rootOrder.contains(show.feedURL), "a new show is in the root's order already")
            tree.rootOrder.append(show.feedURL)
        }
        if let previous, let position = tree.shows.firstIndex(where: { $0.inode == previous.inode }) {
            tree.shows[position] = show
        } else {
            tree.shows.append(show)
        }
        tree.showsByName[show.name] = show
        tree.showsByURL[show.feedURL] = show
        tree.nodes[show.inode] = .show(show)
        tree.nodes[show.playlist.inode] = .playlist(show.playlist)
        for episode in show.episodes + show.extras {
            tree.nodes[episode.inode] = .episode(episode)
            tree.filesByKey[episode.key] = episode
        }
    }
}
