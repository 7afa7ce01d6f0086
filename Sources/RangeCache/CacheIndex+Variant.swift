/// The variant of each episode the cache holds (docs/DESIGN.md, "Episodes
/// and their variants"): the link and validator it is pinned to, whether its
/// origin serves different bytes per request, and whether it is complete.
/// Schema 2 (`IndexSchema`).
extension CacheIndex {
    // MARK: - Methods

    /// Marks the episode's origin as serving different bytes per request,
    /// saying why (`nil` clears the mark). Kept across mounts.
    public func markUnstable(key: String, reason: String?) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            let update = try db.prepare("UPDATE episodes SET unstable = ? WHERE key = ?")
            try update.bind(1, reason)
            try update.bind(2, key)
            try update.run()
        }
    }

    /// The feeds with an episode marked unstable for a reason other than
    /// `inherited` (the mark an episode takes from its show, which is no
    /// evidence of its own). `nil` when the index could not be read.
    public func feedsWithUnstableEpisodes(notCounting inherited: String) -> Set<Int64>? {
        try? connection.withLock { db throws(IndexError) -> Set<Int64> in
            let query = try db.prepare(
                "SELECT DISTINCT feed_id FROM episodes WHERE unstable IS NOT NULL AND unstable <> ?")
            try query.bind(1, inherited)
            var feeds: Set<Int64> = []
            while try query.step() { feeds.insert(query.int64(0)) }
            return feeds
        }
    }

    /// Marks the episode final (every byte of one variant is cached) or
    /// not (its bytes were dropped).
    public func markFinal(key: String, _ isFinal: Bool) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            let update = try db.prepare("UPDATE episodes SET final = ? WHERE key = ?")
            try update.bind(1, Int64(isFinal ? 1 : 0))
            try update.bind(2, key)
            try update.run()
        }
    }

    /// Who sent podfs to `url` when it was pinned (`EpisodeVariant
    /// .pinnedIssuer`), if an episode is pinned to it. Failures read as
    /// unknown: the caller then applies its strictest rule.
    public func pinnedIssuer(url: String) -> String? {
        try? connection.withLock { db throws(IndexError) -> String? in
            let query = try db.prepare(
                "SELECT pinned_issuer FROM episodes WHERE pinned_url = ? AND pinned_issuer IS NOT NULL LIMIT 1")
            try query.bind(1, url)
            return try query.step() ? query.text(0) : nil
        }
    }

    // MARK: - Internal methods

    /// Forgets the ranges, validator and variant of the episode `key`: the
    /// feed now gives it an enclosure at another path than the one cached
    /// (`register`), and even a final episode is replaced when the feed
    /// changes it. A new query alone (`?updated=`) or a new host (a show that
    /// moved to another CDN) is the same file, and is not forgotten.
    static func forgetVariant(_ db: SQLiteConnection, key: String) throws(IndexError) {
        let ranges = try db.prepare("DELETE FROM ranges WHERE episode_id = (SELECT id FROM episodes WHERE key = ?)")
        try ranges.bind(1, key)
        try ranges.run()
        let reset = try db.prepare(
            "UPDATE episodes SET length = NULL, etag = NULL, last_modified = NULL, pinned_url = NULL, "
                + "pinned_issuer = NULL, unstable = NULL, final = 0 WHERE key = ?")
        try reset.bind(1, key)
        try reset.run()
    }

    /// Whether registering `feeds` would forget an episode's variant: one
    /// of them has a row whose enclosure is at another path (`register`
    /// then syncs its commit). SQLite will not change a commit's sync
    /// inside its transaction, so this is asked before it begins.
    ///
    /// Also counts the episodes new to the index (up to the first move
    /// found): only new rows make a registration write many pages.
    static func anyEnclosureMoved(
        _ db: SQLiteConnection, feeds: [(feedURL: String, episodes: [(key: String, url: String)])]
    ) throws(IndexError) -> (moved: Bool, new: Int) {
        let query = try db.prepare("SELECT url FROM episodes WHERE key = ?")
        return try db.reading { () throws(IndexError) -> (moved: Bool, new: Int) in
            var new = 0
            for feed in feeds {
                for episode in feed.episodes {
                    try query.reset()
                    try query.bind(1, episode.key)
                    guard try query.step() else {
                        new += 1
                        continue
                    }
                    if let old = query.text(0), pathsDiffer(old, episode.url) {
                        return (true, new)
                    }
                }
            }
            return (false, new)
        }
    }

    /// A URL's path: without its scheme, host, query and fragment. Read
    /// as bytes, with no copy: it is asked twice of every episode each
    /// time a show is registered (bench/HISTORY.md).
    static func enclosurePath(_ url: String) -> Substring.UTF8View {
        let bytes = url.utf8
        let (slash, question, hash) = (UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"))
        var start = bytes.startIndex
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) {
            let authority = bytes.index(colon, offsetBy: 3)
            start = bytes[authority...].firstIndex { $0 == slash || $0 == question || $0 == hash } ?? bytes.endIndex
        }
        let end = bytes[start...].firstIndex { $0 == question || $0 == hash } ?? bytes.endIndex
        return url[start..<end].utf8
    }

    /// Whether two enclosure URLs name different paths.
    public static func pathsDiffer(_ old: String, _ new: String) -> Bool {
        !enclosurePath(old).elementsEqual(enclosurePath(new))
    }

    /// Saves a validator and the link it pins (inside the caller's lock and,
    /// where it matters, transaction).
    static func save(_ validator: EpisodeValidator, _ db: SQLiteConnection) throws(IndexError) {
        let update = try db.prepare(
            "UPDATE episodes SET length = ?, etag = ?, last_modified = ?, pinned_url = ?, pinned_issuer = ?, "
                + "final = ? WHERE key = ?")
        try update.bind(1, validator.length)
        try update.bind(2, validator.etag)
        try update.bind(3, validator.lastModified)
        try update.bind(4, validator.pinnedURL)
        try update.bind(5, validator.pinnedIssuer)
        try update.bind(6, Int64(validator.isFinal ? 1 : 0))
        try update.bind(7, validator.key)
        try update.run()
    }
}
