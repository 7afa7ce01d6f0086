#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import CSQLite
public import Logging
internal import Locking

/// What the index knows about one episode: its row, its validator, and the
/// byte ranges that are durably on disk in its scratch file.
public struct EpisodeRecord: Sendable, Equatable {
    /// The byte positions an episode may have, 0 to 1 TiB: a length or a
    /// range outside them is not read back from the index.
    public static let positions: ClosedRange<Int64> = 0...(1 << 40)

    public let id: Int64
    public let key: String
    public let url: String
    /// The origin's total length, once a response has told it.
    public let length: Int64?
    public let etag: String?
    public let lastModified: String?
    /// Committed ranges: on disk and fdatasync'ed before they were recorded.
    public let ranges: [Range<Int64>]
    /// When the episode was last read (seconds since the epoch), if ever.
    public var lastRead: Int64? = nil
}

/// An episode's length and validator as a response told them.
public struct EpisodeValidator: Sendable, Equatable {
    public let key: String
    public let length: Int64
    public let etag: String?
    public let lastModified: String?

    public init(key: String, length: Int64, etag: String?, lastModified: String?) {
        self.key = key
        self.length = length
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// A feed and its episodes as the index knows them, for `podfs status`.
public struct FeedSnapshot: Sendable {
    public let url: String
    /// The last good copy of the feed, if one was saved.
    public let body: [UInt8]?
    public let fetchedAt: Int64?
    public let episodes: [EpisodeRecord]
}

/// The last good copy of a feed document.
public struct StoredFeed: Sendable, Equatable {
    public let body: [UInt8]
    public let etag: String?
    public let lastModified: String?
    public let fetchedAt: Int64
}

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

    // MARK: - Private properties

    private let connection: Locked<SQLiteConnection>
    private let logger: Logger

    /// Bumped whenever the schema changes.
    private static let schemaVersion: Int64 = 1

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
        guard version == Self.schemaVersion else {
            throw IndexError(
                message: "the cache index \(path) has schema version \(version), this podfs knows \(Self.schemaVersion)",
                sqliteMessage: nil, code: SQLITE_NOTADB)
        }
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
        let opened: SQLiteConnection
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
        connection = Locked(opened)
        damagedIndexMovedTo = movedTo
    }

    // MARK: - Paths and keys

    /// Where the scratch file of the episode with `key` lives.
    public func dataPath(forKey key: String) -> String {
        directory + "/data/" + key
    }

    /// The stable key of an episode: 32 hex digits derived from the feed's URL
    /// and the episode's identity (guid, else enclosure URL). The same on every
    /// run and every machine, unlike `Hasher`.
    public static func episodeKey(feedURL: String, identity: String) -> String {
        var bytes = Array(feedURL.utf8)
        bytes.append(0)
        bytes.append(contentsOf: identity.utf8)
        let first = fnv1a64(bytes, basis: 0xcbf2_9ce4_8422_2325)
        let second = fnv1a64(bytes, basis: 0x84222325_cbf29ce4 ^ 0x9e37_79b9_7f4a_7c15)
        return hex(mix(first)) + hex(mix(second ^ first))
    }

    // MARK: - Feeds

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

    /// Keeps `body` as the last good copy of the feed at `url`.
    public func saveFeedBody(
        url: String, body: [UInt8], etag: String?, lastModified: String?, fetchedAt: Int64
    ) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            _ = try Self.feedID(db, url: url)
            let update = try db.prepare(
                "UPDATE feeds SET body = ?, etag = ?, last_modified = ?, fetched_at = ? WHERE url = ?")
            try update.bind(1, body)
            try update.bind(2, etag)
            try update.bind(3, lastModified)
            try update.bind(4, fetchedAt)
            try update.bind(5, url)
            try update.run()
        }
    }

    /// The last good copy of the feed at `url`, if one was saved.
    public func feedBody(url: String) throws(IndexError) -> StoredFeed? {
        try connection.withLock { db throws(IndexError) -> StoredFeed? in
            let query = try db.prepare(
                "SELECT body, etag, last_modified, fetched_at FROM feeds WHERE url = ? AND body IS NOT NULL")
            try query.bind(1, url)
            guard try query.step(), let body = query.blob(0) else { return nil }
            return StoredFeed(
                body: body, etag: query.text(1), lastModified: query.text(2),
                fetchedAt: query.optionalInt64(3) ?? 0)
        }
    }

    // MARK: - Episodes

    /// Registers a feed and its episodes in one transaction and returns the
    /// feed's id and each episode's record, in the order given. Existing rows
    /// keep their id (so inode numbers stay stable) and their ranges; a
    /// changed enclosure URL is updated.
    public func register(
        feedURL: String, episodes: [(key: String, url: String)]
    ) throws(IndexError) -> (feedID: Int64, records: [EpisodeRecord]) {
        try register(feeds: [(feedURL: feedURL, episodes: episodes)])[0]
    }

    /// `register` for many feeds in one transaction, each statement
    /// prepared once, and a row that already says the same is not written
    /// again: a mount of a thousand kept feeds registers them all at once,
    /// with one sync at most.
    public func register(
        feeds: [(feedURL: String, episodes: [(key: String, url: String)])]
    ) throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] {
        try connection.withLock { db throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] in
            try db.transaction { () throws(IndexError) -> [(feedID: Int64, records: [EpisodeRecord])] in
                let insert = try db.prepare(
                    "INSERT INTO episodes (key, feed_id, url) VALUES (?, ?, ?) "
                        + "ON CONFLICT(key) DO UPDATE SET url = excluded.url, feed_id = excluded.feed_id "
                        + "WHERE url IS NOT excluded.url OR feed_id IS NOT excluded.feed_id")
                let lookup = try EpisodeLookup(db)
                var result: [(feedID: Int64, records: [EpisodeRecord])] = []
                result.reserveCapacity(feeds.count)
                for feed in feeds {
                    let feedID = try Self.feedID(db, url: feed.feedURL)
                    var records: [EpisodeRecord] = []
                    records.reserveCapacity(feed.episodes.count)
                    for episode in feed.episodes {
                        try insert.reset()
                        try insert.bind(1, episode.key)
                        try insert.bind(2, feedID)
                        try insert.bind(3, episode.url)
                        try insert.run()
                        guard let record = try lookup.record(key: episode.key) else {
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
        }
    }

    /// The record of the episode with `key`, or `nil`.
    public func episode(key: String) throws(IndexError) -> EpisodeRecord? {
        try connection.withLock { db throws(IndexError) -> EpisodeRecord? in
            try Self.episode(db, key: key)
        }
    }

    /// Records the origin's length and validator for an episode.
    public func setValidator(
        key: String, length: Int64, etag: String?, lastModified: String?
    ) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            let update = try db.prepare(
                "UPDATE episodes SET length = ?, etag = ?, last_modified = ? WHERE key = ?")
            try update.bind(1, length)
            try update.bind(2, etag)
            try update.bind(3, lastModified)
            try update.bind(4, key)
            try update.run()
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
                let update = try db.prepare(
                    "UPDATE episodes SET length = ?, etag = ?, last_modified = ? WHERE key = ?")
                for validator in validators {
                    try update.reset()
                    try update.bind(1, validator.length)
                    try update.bind(2, validator.etag)
                    try update.bind(3, validator.lastModified)
                    try update.bind(4, validator.key)
                    try update.run()
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
                    guard let key = episodes.text(0), var record = try Self.episode(db, key: key) else { continue }
                    record.lastRead = episodes.optionalInt64(1)
                    records.append(record)
                }
                result.append(FeedSnapshot(
                    url: feeds.text(1) ?? "", body: feeds.blob(2), fetchedAt: feeds.optionalInt64(3),
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

    private static func open(path: String) throws(IndexError) -> SQLiteConnection {
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
        let version = try db.scalarInt64("PRAGMA user_version") ?? 0
        if version == 0 {
            try db.transaction { () throws(IndexError) in
                try db.execute(
                    """
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
                        last_read INTEGER
                    );
                    CREATE TABLE IF NOT EXISTS ranges (
                        episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
                        lower INTEGER NOT NULL,
                        upper INTEGER NOT NULL,
                        PRIMARY KEY (episode_id, lower),
                        CHECK (lower >= 0 AND upper > lower)
                    ) WITHOUT ROWID;
                    PRAGMA user_version = \(schemaVersion);
                    """)
            }
        } else if version != schemaVersion {
            throw IndexError(
                message: "the cache index \(path) has schema version \(version), this podfs knows \(schemaVersion)",
                sqliteMessage: nil, code: SQLITE_NOTADB)
        }
        // A damaged page shows here rather than in the middle of a read.
        let check = try db.scalarText("PRAGMA quick_check")
        if check != "ok" {
            throw IndexError(
                message: "the cache index \(path) failed its integrity check", sqliteMessage: check,
                code: SQLITE_CORRUPT)
        }
        return db
    }

    private static func feedID(_ db: SQLiteConnection, url: String) throws(IndexError) -> Int64 {
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

    private static func episode(_ db: SQLiteConnection, key: String) throws(IndexError) -> EpisodeRecord? {
        try EpisodeLookup(db).record(key: key)
    }

    /// Reads episode records by key with statements prepared once.
    private struct EpisodeLookup {
        let query: SQLiteStatement
        let ranges: SQLiteStatement

        init(_ db: SQLiteConnection) throws(IndexError) {
            query = try db.prepare("SELECT id, url, length, etag, last_modified FROM episodes WHERE key = ?")
            ranges = try db.prepare("SELECT lower, upper FROM ranges WHERE episode_id = ? ORDER BY lower")
        }

        func record(key: String) throws(IndexError) -> EpisodeRecord? {
            try query.reset()
            try query.bind(1, key)
            guard try query.step() else { return nil }
            let id = query.int64(0)
            try ranges.reset()
            try ranges.bind(1, id)
            // A damaged or hand-edited index may hold any integer: values no
            // episode can have are left out, so a length or range read back is
            // one the read path can compute with (`EpisodeRecord.positions`).
            var found: [Range<Int64>] = []
            while try ranges.step() {
                let lower = ranges.int64(0)
                let upper = ranges.int64(1)
                if lower < upper, lower >= 0, upper <= EpisodeRecord.positions.upperBound {
                    found.append(lower..<upper)
                }
            }
            let length = query.optionalInt64(2).flatMap { EpisodeRecord.positions.contains($0) ? $0 : nil }
            return EpisodeRecord(
                id: id, key: key, url: query.text(1) ?? "", length: length,
                etag: query.text(3), lastModified: query.text(4), ranges: found)
        }
    }

    /// `mkdir -p`: creates `path` and any missing parents.
    private static func makeDirectory(_ path: String) throws(IndexError) {
        let code = CachePrivacy.makeDirectory(path)
        guard code != 0 else { return }
        throw IndexError(
            message: "could not create the cache directory \(path)",
            sqliteMessage: String(cString: strerror(code)), code: SQLITE_CANTOPEN)
    }

    private static func fnv1a64(_ bytes: [UInt8], basis: UInt64) -> UInt64 {
        var hash = basis
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The splitmix64 finalizer: spreads every input bit over the output.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
