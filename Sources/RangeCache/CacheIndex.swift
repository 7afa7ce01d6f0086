#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import CSQLite
public import Logging
internal import Locking

/// The range index: one SQLite database (WAL, `synchronous=FULL`) in the
/// cache directory, next to the `data/` directory of scratch files.
///
/// The index may know less than the disk, never more: callers commit a range
/// only after its bytes were written and `fdatasync`ed (see
/// `ScratchFile.synchronize()`). A database that is damaged or not a database
/// is moved aside and rebuilt empty, with a warning: cached bytes are then
/// fetched again, which costs bandwidth but never serves wrong bytes.
///
/// One connection, used under a lock, so a `CacheIndex` may be shared by any
/// number of threads.
public final class CacheIndex: Sendable {
    // MARK: - Public properties

    /// The cache directory.
    public let directory: String

    /// The path of the SQLite database.
    public var databasePath: String { directory + "/index.sqlite" }

    /// Where a damaged index found when opening was moved to (a new, empty
    /// one replaced it), or `nil`.
    public let damagedIndexMovedTo: String?

    /// The schema version the index had when it was opened: older than
    /// `IndexSchema.current` only for a read-only open (`podfs status`),
    /// which reads an older index as it is and leaves its migration to the
    /// next mount.
    public let schemaVersion: Int64

    // MARK: - Internal properties

    let connection: Locked<SQLiteConnection>
    let logger: Logger

    // MARK: - Init

    /// Opens, or creates, the index in `directory`, creating the directory
    /// and its `data/` subdirectory as needed.
    /// Opens an existing index for reading only (`podfs status`), beside a
    /// mount that may be writing it: no directories or schema are created
    /// and a damaged file is reported, not moved.
    public init(readingDirectory directory: String, logger: Logger) throws(IndexError) {
        self.directory = directory
        self.logger = logger
        let path = directory + "/index.sqlite"
        guard access(path, F_OK) == 0 else {
            throw IndexError(
                message: "there is no cache at \(directory) (no mount has used it yet; pick another with --cache-dir)",
                sqliteMessage: nil, code: 0)
        }
        let db = try SQLiteConnection(path: path, readOnly: true)
        sqlite3_busy_timeout(db.handle, 5000)
        let version = try db.scalarInt64("PRAGMA user_version") ?? 0
        try IndexSchema.refuseNewer(version, path: path)
        schemaVersion = version
        connection = Locked(db)
        damagedIndexMovedTo = nil
    }

    public init(directory: String, logger: Logger) throws(IndexError) {
        self.directory = directory
        self.logger = logger
        try Self.makeDirectory(directory)
        // Before anything is opened: a cache made by an older podfs (or
        // under a loose umask) has 0644 files and 0755 directories.
        let tightened = CachePrivacy.tighten(directory)
        if tightened > 0 {
            logger.info(
                "made the cache directory private to its owner (directories 0700, files 0600)",
                metadata: ["cache.directory": "\(directory)", "entries.tightened": "\(tightened)"])
        }
        try Self.makeDirectory(directory + "/data")
        let path = directory + "/index.sqlite"
        var opened: (db: SQLiteConnection, foundVersion: Int64)
        var movedTo: String?
        do {
            opened = try Self.open(path: path)
        } catch where error.isCorruption {
            var aside = "\(path).corrupt-\(time(nil))"
            var suffix = 2
            while access(aside, F_OK) == 0 {
                aside = "\(path).corrupt-\(time(nil))-\(suffix)"
                suffix += 1
            }
            logger.warning(
                "the cache index is damaged; moving it aside and starting a new one (cached bytes will be fetched again)",
                metadata: ["index.path": "\(path)", "moved.to": "\(aside)", "error": "\(error)"])
            rename(path, aside)
            unlink(path + "-wal")
            unlink(path + "-shm")
            movedTo = aside
            opened = try Self.open(path: path)
        }
        if opened.foundVersion != 0 && opened.foundVersion != IndexSchema.current {
            logger.info(
                "upgraded the cache index to this podfs's schema; everything cached is kept",
                metadata: [
                    "index.path": "\(path)", "schema.from": "\(opened.foundVersion)",
                    "schema.to": "\(IndexSchema.current)",
                ])
        }
        schemaVersion = IndexSchema.current
        connection = Locked(opened.db)
        damagedIndexMovedTo = movedTo
    }

    // MARK: - Paths

    /// Where the scratch file of the episode with `key` lives.
    public func dataPath(forKey key: String) -> String {
        directory + "/data/" + key
    }

    // MARK: - Episodes

    /// Registers a feed and its episodes in one transaction and returns the
    /// feed's id and each episode's record, in the order given. Existing rows
    /// keep their id (so inode numbers stay stable) and their ranges; a
    /// changed enclosure URL is updated. An enclosure whose path changed
    /// (not merely its query) is another file: the episode's ranges, its
    /// validator and its variant are forgotten (`forgetVariant`).
    ///
    /// - Parameter formerKeys: new key to the key the same file had before
    ///   (a show now known by its `podcast:guid`: its key in the feed URL's
    ///   scope). An episode with no row under its new key and one under its
    ///   former key is moved there with its file and everything cached
    ///   (`EpisodeRekeying`).
    public func register(
        feedURL: String, episodes: [(key: String, url: String)], formerKeys: [String: String] = [:]
    ) throws(IndexError) -> (feedID: Int64, records: [EpisodeRecord]) {
        try register(feeds: [(feedURL: feedURL, episodes: episodes)], formerKeys: formerKeys)[0]
    }

    /// A registration of at least this many new episodes has a page cache
    /// of `registrationPageCache` KiB for its transaction.
    static let largeRegistration = 500
    static let registrationPageCache = 16 << 10

    /// `register` for many feeds in one transaction, each statement
    /// prepared once, and a row that already says the same is not written
    /// again: a mount of a thousand kept feeds registers them all at once,
    /// with one sync at most.
    public func register(
        feeds: [(feedURL: String, episodes: [(key: String, url: String)])], formerKeys: [String: String] = [:]
    ) throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] {
        var moved = 0
        var refused: FileError?
        var committed = false
        defer {
            if committed, moved > 0 {
                logger.info(
                    "moved cached episodes to the keys of their show's podcast:guid; nothing is fetched again",
                    metadata: ["episodes.moved": "\(moved)"])
            }
            if let refused {
                logger.info(
                    "could not move a cached episode to its show's podcast:guid key; it will be fetched again",
                    metadata: ["error": "\(refused)"])
            }
        }
        return try connection.withLock { db throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] in
            var rekeying: EpisodeRekeying?
            defer { rekeying?.finish(committed: committed) }
            // Rows that only name episodes need no sync of their own; a
            // transaction that forgets ranges or moves files to new keys does.
            // A crash loses a suffix of the write-ahead log's transactions,
            // never one in the middle, and any later commit that syncs (ranges
            // are committed only so) makes the registrations before it durable
            // too; a lost one is made again by the next mount. Each feed's
            // sync (8.5 ms, serialised) was 3.4 of the 4.4 s it took to list
            // 400 new shows (bench/many-feeds.sh).
            let (enclosureMoved, new) = try Self.anyEnclosureMoved(db, feeds: feeds)
            let lazy = formerKeys.isEmpty && !enclosureMoved
            // A remount's registration of rows it has changes no page: no cache.
            let writesMany = enclosureMoved || new >= Self.largeRegistration
            let pageCache = writesMany ? Self.registrationPageCache : nil
            let result = try db.transaction(syncs: !lazy, pageCache: pageCache) { () throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] in
                if !formerKeys.isEmpty { rekeying = try EpisodeRekeying(db, directory: directory) }
                let insert = try db.prepare(
                    "INSERT INTO episodes (key, feed_id, url) VALUES (?, ?, ?) "
                        + "ON CONFLICT(key) DO UPDATE SET url = excluded.url, feed_id = excluded.feed_id "
                        + "WHERE url IS NOT excluded.url OR feed_id IS NOT excluded.feed_id")
                // A new row tells its id as it is made: nothing else of it
                // is known yet (SQLite 3.35 or later).
                let insertNew = try db.prepare("INSERT INTO episodes (key, feed_id, url) VALUES (?, ?, ?) RETURNING id")
                let lookup = try EpisodeLookup(db, schema: schemaVersion)
                var result: [(feedID: Int64, records: [EpisodeRecord])] = []
                result.reserveCapacity(feeds.count)
                for feed in feeds {
                    let feedID = try Self.feedID(db, url: feed.feedURL)
                    var records: [EpisodeRecord] = []
                    records.reserveCapacity(feed.episodes.count)
                    for episode in feed.episodes {
                        if let formerKey = formerKeys[episode.key] {
                            switch try rekeying?.take(from: formerKey, to: episode.key) {
                            case .moved?: moved += 1
                            case .refused(let error)?: refused = error
                            case .unchanged?, nil: break
                            }
                        }
                        // One lookup says whether the row is new and whether
                        // its enclosure moved (statements prepared once: a
                        // statement prepared per episode was most of a
                        // registration's time).
                        guard let existing = try lookup.record(key: episode.key) else {
                            try insertNew.reset()
                            try insertNew.bind(1, episode.key)
                            try insertNew.bind(2, feedID)
                            try insertNew.bind(3, episode.url)
                            guard try insertNew.step() else {
                                throw IndexError(
                                    message: "could not register episode \(episode.key) in the cache index \(db.path)",
                                    sqliteMessage: nil, code: 0)
                            }
                            records.append(EpisodeRecord(
                                id: insertNew.int64(0), key: episode.key, url: episode.url, length: nil, etag: nil,
                                lastModified: nil, ranges: []))
                            continue
                        }
                        if Self.pathsDiffer(existing.url, episode.url) {
                            try Self.forgetVariant(db, key: episode.key)
                        }
                        try insert.reset()
                        try insert.bind(1, episode.key)
                        try insert.bind(2, feedID)
                        try insert.bind(3, episode.url)
                        try insert.run()
                        guard let record = try existing.url == episode.url ? existing : lookup.record(key: episode.key) else {
                            throw IndexError(
                                message: "could not register episode \(episode.key) in the cache index \(db.path)",
                                sqliteMessage: nil, code: 0)
                        }
                        records.append(record)
                    }
                    result.append((feedID, records))
                }
                return result
            }
            committed = true
            return result
        }
    }

    /// The record of the episode with `key`, or `nil`.
    public func episode(key: String) throws(IndexError) -> EpisodeRecord? {
        try connection.withLock { db throws(IndexError) -> EpisodeRecord? in
            try Self.episode(db, key: key, schema: self.schemaVersion)
        }
    }

    /// Records the origin's length and validator for an episode, with the
    /// link they came from (`EpisodeValidator`).
    public func setValidator(_ validator: EpisodeValidator) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            try Self.save(validator, db)
        }
    }

    /// Replaces the committed ranges of each episode in `batch`, and saves
    /// the validators in `validators` first, all in one transaction. Call
    /// only after the bytes of every range were synced.
    public func commitRanges(
        _ batch: [(key: String, ranges: [Range<Int64>])], validators: [EpisodeValidator] = []
    ) throws(IndexError) {
        guard !batch.isEmpty || !validators.isEmpty else { return }
        try connection.withLock { db throws(IndexError) in
            try db.transaction { () throws(IndexError) in
                for validator in validators {
                    try Self.save(validator, db)
                }
                let delete = try db.prepare(
                    "DELETE FROM ranges WHERE episode_id = (SELECT id FROM episodes WHERE key = ?)")
                let insert = try db.prepare(
                    "INSERT INTO ranges (episode_id, lower, upper) "
                        + "SELECT id, ?, ? FROM episodes WHERE key = ?")
                for entry in batch {
                    try delete.reset()
                    try delete.bind(1, entry.key)
                    try delete.run()
                    for range in entry.ranges where !range.isEmpty {
                        try insert.reset()
                        try insert.bind(1, range.lowerBound)
                        try insert.bind(2, range.upperBound)
                        try insert.bind(3, entry.key)
                        try insert.run()
                    }
                }
            }
        }
    }

    /// Forgets every committed range of an episode, before its scratch file
    /// is reused for different bytes.
    public func dropRanges(key: String) throws(IndexError) {
        try commitRanges([(key: key, ranges: [])])
    }

    /// Forgets every committed range of each episode in `keys`, in one
    /// transaction (before their scratch files are deleted).
    public func dropRanges(keys: [String]) throws(IndexError) {
        try commitRanges(keys.map { (key: $0, ranges: []) })
    }

    /// Records when an episode was last read (for eviction). Failures are
    /// logged, not thrown: the time is a hint.
    public func touch(key: String, at time: Int64) {
        do {
            try connection.withLock { db throws(IndexError) in
                let update = try db.prepare("UPDATE episodes SET last_read = ? WHERE key = ?")
                try update.bind(1, time)
                try update.bind(2, key)
                try update.run()
            }
        } catch {
            logger.warning("could not record when an episode was read", metadata: ["error": "\(error)"])
        }
    }

    /// Committed bytes per episode with its last-read time, least recently
    /// read first (never-read first of all): the eviction order. As in
    /// `episode(key:)`, ranges past 1 TiB count for nothing, and no episode
    /// counts for more than 1 TiB, so the sums cannot overflow.
    public func usage() throws(IndexError) -> [(key: String, bytes: Int64, lastRead: Int64?)] {
        try connection.withLock { db throws(IndexError) -> [(key: String, bytes: Int64, lastRead: Int64?)] in
            let query = try db.prepare(
                """
                SELECT e.key,
                    MIN(COALESCE(SUM(CASE WHEN r.upper <= 1099511627776 THEN r.upper - r.lower ELSE 0 END), 0),
                        1099511627776),
                    e.last_read
                FROM episodes e LEFT JOIN ranges r ON r.episode_id = e.id
                GROUP BY e.id ORDER BY COALESCE(e.last_read, 0), e.id
                """)
            var result: [(key: String, bytes: Int64, lastRead: Int64?)] = []
            while try query.step() {
                result.append((query.text(0) ?? "", query.int64(1), query.optionalInt64(2)))
            }
            return result
        }
    }

    /// The bytes the cache holds in all, as `usage()` would sum them, in
    /// one aggregate query (a mount asks at start, before it is ready).
    public func cachedBytes() throws(IndexError) -> Int64 {
        try connection.withLock { db throws(IndexError) -> Int64 in
            // TOTAL is a float: no overflow, whatever a damaged index holds.
            let query = try db.prepare(
                "SELECT CAST(MIN(TOTAL(CASE WHEN upper <= 1099511627776 AND upper > lower THEN upper - lower "
                    + "ELSE 0 END), 9.0e18) AS INTEGER) FROM ranges")
            guard try query.step() else { return 0 }
            return max(0, query.int64(0))
        }
    }

    /// Every feed with its episodes, ranges and last-read times, read in one
    /// transaction so the picture is consistent while a mount writes.
    public func snapshot() throws(IndexError) -> [FeedSnapshot] {
        try connection.withLock { db throws(IndexError) -> [FeedSnapshot] in
            try db.execute("BEGIN")
            defer { _ = try? db.execute("COMMIT") }
            let feeds = try db.prepare("SELECT id, url, body, fetched_at FROM feeds ORDER BY id")
            var result: [FeedSnapshot] = []
            while try feeds.step() {
                let id = feeds.int64(0)
                let episodes = try db.prepare(
                    "SELECT key, last_read FROM episodes WHERE feed_id = ? ORDER BY id")
                try episodes.bind(1, id)
                var records: [EpisodeRecord] = []
                while try episodes.step() {
                    guard let key = episodes.text(0), var record = try Self.episode(db, key: key, schema: self.schemaVersion) else { continue }
                    record.lastRead = episodes.optionalInt64(1)
                    records.append(record)
                }
                result.append(FeedSnapshot(
                    url: feeds.text(1) ?? "", body: feeds.blob(2).map(FeedBodyCoding.decode), fetchedAt: feeds.optionalInt64(3),
                    episodes: records))
            }
            return result
        }
    }

    /// Folds the write-ahead log into the database file, so a cache at rest
    /// is one self-contained file. Called at unmount; failures are logged.
    public func checkpoint() {
        do {
            try connection.withLock { db throws(IndexError) in
                _ = try db.scalarText("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch {
            logger.warning("could not checkpoint the cache index", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - Private methods

    /// Opens the index at `path`, creating or migrating its tables; returns
    /// it with the schema version it had (0: new).
    private static func open(path: String) throws(IndexError) -> (db: SQLiteConnection, foundVersion: Int64) {
        // SQLite would create the file 0644; its -wal and -shm take the
        // mode of the file.
        let created = CachePrivacy.createFile(path)
        guard created == 0 else {
            throw IndexError(
                message: "could not create the cache index \(path)", sqliteMessage: String(cString: strerror(created)),
                code: SQLITE_CANTOPEN)
        }
        let db = try SQLiteConnection(path: path)
        sqlite3_busy_timeout(db.handle, 5000)
        // journal_mode reads the file: the first place a non-database shows.
        _ = try db.scalarText("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        let found = try IndexSchema.prepare(db, path: path)
        // A damaged page shows here rather than in the middle of a read.
        let check = try db.scalarText("PRAGMA quick_check")
        if check != "ok" {
            throw IndexError(
                message: "the cache index \(path) failed its integrity check", sqliteMessage: check,
                code: SQLITE_CORRUPT)
        }
        return (db, found)
    }

    /// The episode's row and ranges, read from an index of version `schema`
    /// (a read-only open may see one not yet migrated).
    static func episode(_ db: SQLiteConnection, key: String, schema: Int64) throws(IndexError) -> EpisodeRecord? {
        try EpisodeLookup(db, schema: schema).record(key: key)
    }

    /// `mkdir -p`: creates `path` and any missing parents.
    private static func makeDirectory(_ path: String) throws(IndexError) {
        let code = CachePrivacy.makeDirectory(path)
        guard code != 0 else { return }
        throw IndexError(
            message: "could not create the cache directory \(path)",
            sqliteMessage: String(cString: strerror(code)), code: SQLITE_CANTOPEN)
    }
}
