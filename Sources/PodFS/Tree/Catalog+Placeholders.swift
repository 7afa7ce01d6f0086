public import Feeds
import FUSEBridge
import Foundation

/// Shows listed before they are built: a mount with kept copies lists its
/// root at once from the shows the last mount had, and builds each show from
/// its kept copy in the background, or at once when something looks into it
/// (docs/DESIGN.md, "Feeds": kept copies serve at once).
///
/// A placeholder has the name, inode and time its show had, so building it
/// changes nothing the kernel may have seen; the built show takes its place
/// in the root's order.
extension Catalog {
    // MARK: - Nested types

    /// A show listed before it is built: as the last mount listed it, or
    /// as its feed arrived in this one (`listArrived`).
    public struct Placeholder: Codable, Sendable, Equatable {
        public var url: String
        public var name: String
        public var inode: UInt64
        public var modificationTime: Int64
        /// The show's listing (`Catalog.listingSignature`); `nil` in a list
        /// an earlier podfs saved.
        public var listing: UInt64?
        /// What the show adds to `Latest.m3u` (`Show.latest`), as the last
        /// mount built it; `nil` when not known (a show listed on arrival,
        /// a list an earlier podfs saved): opening the playlist builds it.
        var latest: [LatestPlaylist.Entry]?

        public init(url: String, name: String, inode: UInt64, modificationTime: Int64, listing: UInt64? = nil) {
            self.url = url
            self.name = name
            self.inode = inode
            self.modificationTime = modificationTime
            self.listing = listing
        }
    }

    // MARK: - Methods

    /// Lists `placeholders` (in order) for shows the tree does not have;
    /// `builder` builds the shows of URLs (from their kept copies, through
    /// `add`) when something looks into one before the background pass
    /// did, or opens `Latest.m3u`, which lists every show
    /// (`buildShowsForLatest`). A name or inode already taken is left out.
    public func list(_ placeholders: [Placeholder], builder: @escaping @Sendable (_ urls: [String]) -> Void) {
        self.builder.withLock { $0 = builder }
        // A list an earlier podfs saved numbers shows as it did.
        let placeholders = placeholders.map { saved in
            var placeholder = saved
            placeholder.inode = Catalog.currentInode(ofSaved: saved.inode)
            return placeholder
        }
        tree.withLock { tree in
            // The root's order names every show and placeholder.
            if tree.rootOrder.isEmpty { tree.rootOrder = tree.shows.map(\.feedURL) }
            for placeholder in placeholders
            where tree.placeholders[placeholder.url] == nil && tree.showsByURL[placeholder.url] == nil
                && !tree.isNameTaken(placeholder.name) && tree.nodes[placeholder.inode] == nil
            {
                tree.insert(placeholder)
            }
            // What the last mount's shows added to `Latest.m3u`, at once.
            tree.refreshLatest(now: Catalog.wallClock())
        }
    }

    /// Lists the show of a feed that just arrived, new to this mount, as a
    /// placeholder: its folder is in the root at once, and the show is
    /// built (laid out, its files registered) when something looks into
    /// it or by the mount's background pass, from the kept copy the loader
    /// saved. The name, inode and time are the ones the build gives it, so
    /// building changes nothing the kernel may have seen. `nil` when the
    /// feed has a show or a placeholder, or was unsubscribed (the caller
    /// then builds it at once).
    ///
    /// A thousand shows were listed at the pace of their builds, one batch
    /// after another under `updating`; this takes only the tree's lock
    /// (bench/HISTORY.md, "listed on arrival").
    public func listArrived(url: String, feed: ParsedFeed) throws -> Placeholder? {
        let inode = Self.inode(.show, id: try index.feedID(url: url))
        let time = Self.feedTime(feed)
        let stem = Naming.sanitize(feed.title)
        return tree.withLock { tree -> Placeholder? in
            guard tree.placeholders[url] == nil, tree.beingBuilt[url] == nil,
                tree.showsByURL[url] == nil, !tree.removed.contains(url),
                tree.nodes[inode] == nil, tree.placeholdersByInode[inode] == nil
            else { return nil }
            let name = Naming.uniqueName(stem: stem, suffix: "") { tree.isNameTaken($0) }
            let placeholder = Placeholder(url: url, name: name, inode: inode, modificationTime: time)
            if tree.rootOrder.isEmpty { tree.rootOrder = tree.shows.map(\.feedURL) }
            tree.insert(placeholder)
            tree.rootChangedAt = Self.wallClock()
            return placeholder
        }
    }

    /// Forgets the placeholder of `url` (its kept copy did not give a
    /// show); returns it, for the caller to tell the kernel.
    @discardableResult
    public func dropPlaceholder(url: String) -> Placeholder? {
        tree.withLock { tree in
            guard tree.placeholders[url] != nil else { return nil }
            // The root's time first: a playlist left empty takes it.
            tree.rootChangedAt = Catalog.wallClock()
            let placeholder = tree.removePlaceholder(url: url)
            tree.rootOrder.removeAll { $0 == url }
            return placeholder
        }
    }

    /// The name of the root's folder of the feed at `url`, built or not.
    public func folderName(url: String) -> String? {
        tree.withLock { tree in tree.showsByURL[url]?.name ?? tree.placeholders[url]?.name }
    }

    /// Whether the root has a folder of the feed at `url`, built or not.
    public func isListed(url: String) -> Bool {
        tree.withLock { tree in tree.placeholders[url] != nil || tree.showsByURL[url] != nil }
    }

    /// The URLs of shows listed and not built yet.
    public var placeholderURLs: [String] {
        tree.withLock { tree in tree.placeholders.isEmpty ? [] : tree.rootOrder.filter { tree.placeholders[$0] != nil } }
    }

    /// What the next mount lists before it builds anything: every show, in
    /// the root's order.
    ///
    /// Each keeps what it adds to `Latest.m3u` now, and no more: an entry
    /// left out is older than the 100 listed (or as old, and later in the
    /// root's order), and the window drops the oldest first. So the next
    /// mount's playlist is whole at once unless a show was taken out or
    /// its feed changed meanwhile: then it is short of what that brings
    /// until the shows are built (each build tells the kernel; opening
    /// the playlist does not build them).
    public var placeholdersToSave: [Placeholder] {
        tree.withLock { tree in
            let sources = tree.latestSources
            var listed = [String: [LatestPlaylist.Entry]]()
            for pick in LatestPlaylist.picks(of: sources, now: Self.wallClock()) {
                listed[sources[pick.show].folder, default: []].append(pick.entry)
            }
            return Self.rootEntries(tree).compactMap { entry in
                var placeholder: Placeholder
                if let listedBefore = tree.placeholdersByInode[entry.inode] {
                    placeholder = listedBefore
                    // Not known stays not known: its build says.
                    if placeholder.latest == nil { return placeholder }
                } else {
                    guard case .show(let show) = tree.nodes[entry.inode] else { return nil }
                    placeholder = Placeholder(
                        url: show.feedURL, name: show.name, inode: show.inode, modificationTime: show.modificationTime,
                        listing: show.listing)
                }
                placeholder.latest = listed[placeholder.name] ?? []
                return placeholder
            }
        }
    }

    /// The modification time a placeholder's directory shows.
    func placeholderTime(inode: UInt64) -> Int64? {
        tree.withLock { $0.placeholdersByInode[inode]?.modificationTime }
    }

    // MARK: - Internal methods

    /// The show named `name` in the root, built from its placeholder.
    /// A name inside a placeholder's folder (a player's saved path after
    /// `ls` of the root, which builds nothing): the show is built first.
    func lookupPlaceholder(parent: UInt64, name: String) -> Node? {
        if parent != Catalog.rootInode {
            guard let url = tree.withLock({ $0.placeholdersByInode[parent]?.url }) else { return nil }
            build(url: url)
            return tree.withLock { tree in
                guard case .show(let show) = tree.nodes[parent] else { return nil }
                return show.byName[name]
            }
        }
        guard let url = tree.withLock({ $0.placeholdersByName[name]?.url }) else { return nil }
        build(url: url)
        return tree.withLock { $0.showsByName[name].map { .show($0) } }
    }

    /// Builds the show of a placeholder now, on the caller's thread.
    func build(url: String) {
        guard let builder = builder.withLock({ $0 }) else { return }
        builder([url])
    }

    /// Builds every show listed whose part of `Latest.m3u` is not known
    /// (listed on arrival, or by an earlier podfs), now, on the caller's
    /// thread: what the playlist must hold before it is read. A show
    /// listed from the last mount adds what it added then, unbuilt.
    /// Returns whether there was any.
    func buildShowsForLatest() -> Bool {
        let urls = tree.withLock { tree in
            tree.placeholders.isEmpty ? [] : tree.rootOrder.filter { tree.placeholders[$0].map { $0.latest == nil } ?? false }
        }
        guard !urls.isEmpty, let builder = builder.withLock({ $0 }) else { return false }
        // Last first: the mount's background pass builds arrivals first
        // first, and the two meet once rather than parse the same batches.
        builder(urls.reversed())
        return true
    }

    /// The root's entries: in `rootOrder` while placeholders exist, so a
    /// show built from one keeps its place during a listing.
    static func rootEntries(_ tree: Tree) -> [DirectoryEntry] {
        guard !tree.rootOrder.isEmpty else {
            return tree.shows.map { DirectoryEntry(name: $0.name, inode: $0.inode, kind: .directory) }
        }
        return tree.rootOrder.compactMap { url in
            if let show = tree.showsByURL[url] { return DirectoryEntry(name: show.name, inode: show.inode, kind: .directory) }
            return tree.placeholders[url].map { DirectoryEntry(name: $0.name, inode: $0.inode, kind: .directory) }
        }
    }
}
