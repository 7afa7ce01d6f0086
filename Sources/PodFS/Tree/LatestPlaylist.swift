import ReadRules
/// The mount root's `Latest.m3u`: the newest episodes of every show, newest
/// first, each a path relative to the root (docs/DESIGN.md, "What a mount
/// shows").
///
/// Pure: made from what each show keeps for it (`entries(of:now:)`) and the
/// time it is made, so tests need no mount. It lists only episodes dated
/// within `window` before that time, or later (a feed's clock may run
/// ahead), at most `limit` of them; an episode with no date is never listed.
/// Ties keep the shows' order, then each folder's listing order. With
/// nothing to list it is the `#EXTM3U` line alone.
enum LatestPlaylist {
    // MARK: - Nested types

    /// One episode the playlist may list; saved with the show list, so a
    /// remount's playlist lists shows before they are built.
    struct Entry: Sendable, Equatable, Codable {
        /// Its publication date, seconds since the epoch.
        var published: Int64
        /// The title on one line (else the file name), for `#EXTINF`.
        var title: String
        /// The file's name in its show folder.
        var name: String
    }

    /// What the playlist is made of: a show folder's name and what it keeps
    /// for the playlist (`Catalog.Show.latest`).
    typealias Source = (folder: String, entries: [Entry])

    // MARK: - Properties

    /// The file's name in the root.
    static let name = "Latest.m3u"
    /// How far back it reaches: 14 days.
    static let window: Int64 = 14 * 86_400
    /// How many episodes it lists at most.
    static let limit = 100

    // MARK: - Methods

    /// What a show keeps for the playlist: its episodes dated within
    /// `window` before `now` (or later), newest first, ties in listing
    /// order, at most `limit`. A playlist made later reaches back less far,
    /// so what it lists of the show is always among these.
    static func entries(of episodes: [ShowLayout.Item], now: Int64) -> [Entry] {
        let cutoff = now.saturatingAdding(-window)
        var kept: [(position: Int, entry: Entry)] = []
        for (position, item) in episodes.enumerated() {
            guard item.kind == .episode, let published = item.episode?.published, published >= cutoff else { continue }
            let title = ShowLayout.oneLine(item.episode?.title) ?? item.name
            kept.append((position, Entry(published: published, title: title, name: item.name)))
        }
        kept.sort { a, b in
            a.entry.published != b.entry.published ? a.entry.published > b.entry.published : a.position < b.position
        }
        return kept.prefix(limit).map(\.entry)
    }

    /// The playlist's bytes, made at `now` from `shows` in the root's
    /// order, and the newest date it lists (`nil` when it lists nothing).
    static func content(of shows: [Source], now: Int64) -> (bytes: [UInt8], newest: Int64?) {
        let cutoff = now.saturatingAdding(-window)
        var picked: [(published: Int64, show: Int, position: Int)] = []
        for (show, source) in shows.enumerated() {
            for (position, entry) in source.entries.enumerated() where entry.published >= cutoff {
                picked.append((entry.published, show, position))
            }
        }
        picked.sort { a, b in
            a.published != b.published ? a.published > b.published : (a.show, a.position) < (b.show, b.position)
        }
        var text = "#EXTM3U\n"
        for pick in picked.prefix(limit) {
            let folder = shows[pick.show].folder
            let entry = shows[pick.show].entries[pick.position]
            // A line starting with '#' would read as a comment.
            let path = folder.hasPrefix("#") ? "./" + folder + "/" + entry.name : folder + "/" + entry.name
            text += "#EXTINF:-1,\(folder) — \(entry.title)\n\(path)\n"
        }
        return (Array(text.utf8), picked.first?.published)
    }
}
