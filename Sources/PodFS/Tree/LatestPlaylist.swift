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
    ///
    /// A show's entries are newest first, ties in listing order
    /// (`entries(of:now:)`; others are put in that order first), so the
    /// playlist is a merge of them that stops at `limit`. It is made again
    /// at every show installed: a look at each entry's order is left of
    /// the sort of every entry each time.
    static func content(of shows: [Source], now: Int64) -> (bytes: [UInt8], newest: Int64?) {
        let picked = picks(of: shows, now: now)
        var text = "#EXTM3U\n"
        for pick in picked {
            let folder = shows[pick.show].folder
            // A line starting with '#' would read as a comment.
            let path = folder.hasPrefix("#") ? "./" + folder + "/" + pick.entry.name : folder + "/" + pick.entry.name
            text += "#EXTINF:-1,\(folder) — \(pick.entry.title)\n\(path)\n"
        }
        return (Array(text.utf8), picked.first?.entry.published)
    }

    /// The entries the playlist made at `now` from `shows` lists, in its
    /// order, each with its show's position in `shows` (`content`).
    static func picks(of shows: [Source], now: Int64) -> [(show: Int, entry: Entry)] {
        let cutoff = now.saturatingAdding(-window)
        let shows = shows.map { source -> Source in
            let entries = source.entries
            let newestFirst = zip(entries, entries.dropFirst()).allSatisfy { $0.published >= $1.published }
            if newestFirst { return source }
            // A stable sort: the listing order breaks ties.
            let ordered = entries.enumerated().sorted { a, b in
                a.element.published != b.element.published ? a.element.published > b.element.published : a.offset < b.offset
            }
            return (source.folder, ordered.map(\.element))
        }
        // Each show's next entry, the newest (then the first show) on top.
        var heads = PriorityQueue<(published: Int64, show: Int, position: Int)> { a, b in
            a.published != b.published ? a.published > b.published : a.show < b.show
        }
        for (show, source) in shows.enumerated() {
            guard let first = source.entries.first, first.published >= cutoff else { continue }
            heads.insert((first.published, show, 0))
        }
        var picked: [(show: Int, entry: Entry)] = []
        while picked.count < limit, let head = heads.popFirst() {
            let entries = shows[head.show].entries
            picked.append((head.show, entries[head.position]))
            let next = head.position + 1
            if next < entries.count, entries[next].published >= cutoff {
                heads.insert((entries[next].published, head.show, next))
            }
        }
        return picked
    }
}

/// A binary heap: `ordered(a, b)` when `a` comes out before `b`.
struct PriorityQueue<Element> {
    private var elements: [Element] = []
    private let ordered: (Element, Element) -> Bool

    init(ordered: @escaping (Element, Element) -> Bool) {
        self.ordered = ordered
    }

    mutating func insert(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard ordered(elements[child], elements[parent]) else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popFirst() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let first = elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < elements.count else { break }
            let right = left + 1
            let child = right < elements.count && ordered(elements[right], elements[left]) ? right : left
            guard ordered(elements[child], elements[parent]) else { break }
            elements.swapAt(child, parent)
            parent = child
        }
        return first
    }
}
