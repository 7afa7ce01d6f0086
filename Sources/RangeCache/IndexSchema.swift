internal import CSQLite

/// The index's tables, by schema version, and how an older index is brought
/// up to date in place (docs/DESIGN.md, "The cache index").
///
/// An index of any older version is migrated, in one transaction, by the
/// steps from its version on; its feeds, episodes and ranges are kept. An
/// index of a newer version than this podfs knows is refused with a clear
/// error and left as it is: it is neither damaged nor this podfs's to
/// change.
enum IndexSchema {
    // MARK: - Static properties

    /// The version this podfs writes (`PRAGMA user_version`).
    static let current: Int64 = 4

    /// The tables of a new index, at `current`.
    static let create = """
        CREATE TABLE IF NOT EXISTS feeds (
            id INTEGER PRIMARY KEY,
            url TEXT NOT NULL UNIQUE,
            body BLOB,
            etag TEXT,
            last_modified TEXT,
            fetched_at INTEGER
        );
        CREATE TABLE IF NOT EXISTS episodes (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            feed_id INTEGER NOT NULL REFERENCES feeds(id),
            url TEXT NOT NULL,
            length INTEGER,
            etag TEXT,
            last_modified TEXT,
            last_read INTEGER,
            pinned_url TEXT,
            pinned_issuer TEXT,
            unstable TEXT,
            final INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS ranges (
            episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
            lower INTEGER NOT NULL,
            upper INTEGER NOT NULL,
            PRIMARY KEY (episode_id, lower),
            CHECK (lower >= 0 AND upper > lower)
        ) WITHOUT ROWID;
        """ + keepTables

    /// What a user chose to keep offline (docs/DESIGN.md, "Offline by
    /// policy"): a show's own number of newest episodes kept, by the show's
    /// identity (`CacheScope.keyScope`), and the pinned episodes, by key.
    /// Not tied to `episodes` rows: a setting outlives its episode's cached
    /// bytes and a feed's move.
    static let keepTables = """
        CREATE TABLE IF NOT EXISTS kept_shows (
            show TEXT PRIMARY KEY,
            latest INTEGER NOT NULL CHECK (latest >= 0)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pinned_episodes (
            key TEXT PRIMARY KEY
        ) WITHOUT ROWID;
        """

    /// The step from version `n` to `n + 1`, at index `n - 1`.
    ///
    /// 1 → 2: the variant of each episode (docs/DESIGN.md, "Episodes and
    /// their variants"). An episode cached by schema 1 has no pinned link
    /// (its next fetch follows the enclosure URL and pins where it leads,
    /// with the ETag it already has), is not known unstable and not final.
    ///
    /// 2 → 3: the keep settings (`keepTables`), empty: nothing was kept by
    /// choice before.
    ///
    /// 3 → 4: why an episode is marked unstable is a stable code, not the
    /// sentence a log line said (rewording one changed what the cache did:
    /// a show's marks are told from their own by that text). The sentences
    /// earlier versions wrote move to their codes; one not known here
    /// becomes `overlap-mismatch` (the oldest mark, "the overlap did not
    /// match", was one), evidence of its own as before.
    static let steps: [String] = [
        """
        ALTER TABLE episodes ADD COLUMN pinned_url TEXT;
        ALTER TABLE episodes ADD COLUMN pinned_issuer TEXT;
        ALTER TABLE episodes ADD COLUMN unstable TEXT;
        ALTER TABLE episodes ADD COLUMN final INTEGER NOT NULL DEFAULT 0;
        """,
        keepTables,
        """
        UPDATE episodes SET unstable = CASE
            WHEN unstable LIKE 'the length changed between requests%' THEN 'length-changed'
            WHEN unstable = 'the validator changed between requests' THEN 'validator-changed'
            WHEN unstable = 'the ETag vanished between requests' THEN 'etag-vanished'
            WHEN unstable = 'a range was asked and the whole body came (HTTP 200)' THEN 'whole-body-for-range'
            WHEN unstable = 'bytes fetched again did not match the cached ones' THEN 'overlap-mismatch'
            WHEN unstable = 'the origin sends no validator (no ETag, no Last-Modified)' THEN 'no-validator'
            WHEN unstable = 'as another episode of its show' THEN 'show-stitches'
            ELSE 'overlap-mismatch'
        END WHERE unstable IS NOT NULL;
        """,
    ]

    // MARK: - Static methods

    /// Creates the tables of an empty index, or migrates an older one, in
    /// one transaction; returns the version found before (0: a new index).
    /// The version is read again inside the transaction, so two processes
    /// opening one old index migrate it once.
    static func prepare(_ db: SQLiteConnection, path: String) throws(IndexError) -> Int64 {
        try refuseNewer(try db.scalarInt64("PRAGMA user_version") ?? 0, path: path)
        return try db.transaction { () throws(IndexError) -> Int64 in
            let found = try db.scalarInt64("PRAGMA user_version") ?? 0
            try refuseNewer(found, path: path)
            if found == 0 {
                try db.execute(create)
            } else {
                for step in steps[Int(found - 1)...] { try db.execute(step) }
            }
            if found != current { try db.execute("PRAGMA user_version = \(current)") }
            return found
        }
    }

    /// Throws the error for an index written by a newer podfs.
    static func refuseNewer(_ version: Int64, path: String) throws(IndexError) {
        if version < 0 {
            throw IndexError(
                message: "the cache index \(path) has an impossible schema version \(version)", sqliteMessage: nil,
                code: SQLITE_CORRUPT)
        }
        guard version > current else { return }
        throw IndexError(
            message: "the cache index \(path) has schema version \(version), made by a newer podfs (this one "
                + "knows versions up to \(current)); it was left as it is. Use that newer podfs with this cache, "
                + "or give this one another cache with --cache-dir",
            sqliteMessage: nil, code: 0)
    }
}
