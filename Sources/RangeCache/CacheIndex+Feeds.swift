/// Feed rows: ids for episodes to hang on, and the last good copy of each
/// feed document.
extension CacheIndex {
    // MARK: - Methods

    /// The row id of the feed with `url`, creating the row if needed.
    public func feedID(url: String) throws(IndexError) -> Int64 {
        try connection.withLock { db throws(IndexError) -> Int64 in
            try Self.feedID(db, url: url)
        }
    }

    /// The URLs of the feeds that have a kept copy, without reading the
    /// copies.
    public func keptFeedURLs() throws(IndexError) -> Set<String> {
        try connection.withLock { db throws(IndexError) -> Set<String> in
            let query = try db.prepare("SELECT url FROM feeds WHERE body IS NOT NULL")
            var urls = Set<String>()
            while try query.step() {
                if let url = query.text(0) { urls.insert(url) }
            }
            return urls
        }
    }

    /// Keeps `body` as the last good copy of the feed at `url`, compressed
    /// (`FeedBodyCoding`).
    ///
    /// Its commit is not synced on its own: the write-ahead log holds it
    /// through a killed daemon, and the next synced commit (or checkpoint)
    /// makes it durable. A copy lost to a power cut is fetched again; it
    /// holds no byte the index claims. A synced commit per feed was 1,000
    /// `fdatasync`s of a growing log on a mount of 1,000 feeds, each on the
    /// way to that show's listing.
    public func saveFeedBody(
        url: String, body: [UInt8], etag: String?, lastModified: String?, fetchedAt: Int64
    ) throws(IndexError) {
        let stored = FeedBodyCoding.encode(body)
        try connection.withLock { db throws(IndexError) in
            try db.transaction(syncs: false) { () throws(IndexError) in
                _ = try Self.feedID(db, url: url)
                let update = try db.prepare(
                    "UPDATE feeds SET body = ?, etag = ?, last_modified = ?, fetched_at = ? WHERE url = ?")
                try update.bind(1, stored)
                try update.bind(2, etag)
                try update.bind(3, lastModified)
                try update.bind(4, fetchedAt)
                try update.bind(5, url)
                try update.run()
            }
        }
    }

    /// The last good copy of the feed at `url`, if one was saved.
    public func feedBody(url: String) throws(IndexError) -> StoredFeed? {
        let stored = try connection.withLock { db throws(IndexError) -> StoredFeed? in
            let query = try db.prepare(
                "SELECT body, etag, last_modified, fetched_at FROM feeds WHERE url = ? AND body IS NOT NULL")
            try query.bind(1, url)
            guard try query.step(), let body = query.blob(0) else { return nil }
            return StoredFeed(
                body: body, etag: query.text(1), lastModified: query.text(2),
                fetchedAt: query.optionalInt64(3) ?? 0)
        }
        // Inflated outside the lock: other feeds' saves and registrations wait for it.
        return stored.map { stored in
            StoredFeed(
                body: FeedBodyCoding.decode(stored.body), etag: stored.etag, lastModified: stored.lastModified,
                fetchedAt: stored.fetchedAt)
        }
    }

    // MARK: - Internal methods

    /// The feed's row id, inserting the row if needed (inside the caller's
    /// lock and transaction).
    static func feedID(_ db: SQLiteConnection, url: String) throws(IndexError) -> Int64 {
        let insert = try db.prepare("INSERT INTO feeds (url) VALUES (?) ON CONFLICT(url) DO NOTHING")
        try insert.bind(1, url)
        try insert.run()
        let query = try db.prepare("SELECT id FROM feeds WHERE url = ?")
        try query.bind(1, url)
        guard try query.step() else {
            // No URL: it may carry the feed's token, and this ends up in logs.
            throw IndexError(message: "could not register a feed in the cache index \(db.path)", sqliteMessage: nil, code: 0)
        }
        return query.int64(0)
    }
}
