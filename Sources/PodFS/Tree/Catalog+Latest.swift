import FUSEBridge

/// The root's `Latest.m3u` (`LatestPlaylist`), held in the tree as a node
/// like any playlist and always listed.
///
/// It is made again whenever the tree's shows change (`Tree.shows`
/// observes itself), so a show installed, updated or taken out changes it
/// in the same step, and a `stat` or a read never makes it. A `Playlist` is
/// immutable: a file opened before reads the version it opened, and one
/// made with the same bytes and time is not made at all, so the kernel is
/// told only of a real change (`Change.latestChanged`).
///
/// A show listed from the last mount and not built yet adds what it added
/// then (`Placeholder.latest`, saved with the show list), so a remount's
/// playlist is whole at once. A show listed on arrival adds nothing until
/// it is built; opening the playlist builds such shows first
/// (`buildShowsForLatest`).
extension Catalog {
    // MARK: - Properties

    /// `Latest.m3u`'s inode: 2^31 - 4, a fixed number of kind 0 like the
    /// root's other fixed nodes (`InodeKind`). No show, episode or playlist
    /// can have it: their two lowest bits are never 0, in the low 32 bits
    /// too. `ControlFiles` numbers up from 4 and would need 2^29 files to
    /// reach it, and it fits in a signed 32-bit `st_ino`.
    public static let latestPlaylistInode: UInt64 = (1 << 31) - 4

    /// The root's `Latest.m3u` as it is now.
    public var latestPlaylist: Playlist {
        tree.withLock { $0.latest }
    }

    /// Names no show folder may take in the root.
    static let reservedRootNames: Set<[UInt8]> = [Array(LatestPlaylist.name.utf8)]

    /// `Latest.m3u` before the catalogue is made (then with the root's time).
    static let emptyLatestPlaylist = Playlist(
        inode: latestPlaylistInode, name: LatestPlaylist.name, content: Array("#EXTM3U\n".utf8), modificationTime: 0)
}

extension Catalog.Tree {
    // MARK: - Latest.m3u

    /// The root's `Latest.m3u`: always among `nodes`.
    var latest: Playlist {
        guard case .playlist(let playlist) = nodes[Catalog.latestPlaylistInode] else {
            return Catalog.emptyLatestPlaylist
        }
        return playlist
    }

    /// Its entry in the root's listing, after the shows.
    var latestEntry: DirectoryEntry {
        DirectoryEntry(name: LatestPlaylist.name, inode: Catalog.latestPlaylistInode, kind: .regularFile)
    }

    /// Makes `Latest.m3u` again from `shows` at `now`. Its time is its
    /// newest episode's, or the root's when it lists none; the same bytes
    /// and time keep the same `Playlist`.
    mutating func refreshLatest(now: Int64) {
        let (bytes, newest) = LatestPlaylist.content(of: latestSources, now: now)
        let time = newest ?? rootTime
        let current = latest
        guard bytes != current.content || time != current.modificationTime else { return }
        nodes[Catalog.latestPlaylistInode] = .playlist(
            Playlist(inode: Catalog.latestPlaylistInode, name: LatestPlaylist.name, content: bytes, modificationTime: time))
    }

    /// What `Latest.m3u` is made of, in the root's order (ties keep it): each
    /// show's part, and what each show listed from the last mount and not
    /// built yet added then (its build adds the same, in the same place, so
    /// the kernel is told nothing new). `shows` is the truth: a show taken
    /// out leaves it before `showsByURL` and `rootOrder`.
    var latestSources: [LatestPlaylist.Source] {
        guard !rootOrder.isEmpty else { return shows.map { (folder: $0.name, entries: $0.latest) } }
        var built = [String: Catalog.Show](minimumCapacity: shows.count)
        for show in shows { built[show.feedURL] = show }
        var sources: [LatestPlaylist.Source] = []
        sources.reserveCapacity(rootOrder.count)
        for url in rootOrder {
            if let show = built.removeValue(forKey: url) {
                sources.append((folder: show.name, entries: show.latest))
            } else if let placeholder = placeholders[url], let latest = placeholder.latest, !latest.isEmpty {
                sources.append((folder: placeholder.name, entries: latest))
            }
        }
        // None is left out of the root's order; if one were, it comes last.
        return sources + shows.filter { built[$0.feedURL] != nil }.map { (folder: $0.name, entries: $0.latest) }
    }
}
