internal import CSQLite

/// One open SQLite database connection, closed when this object goes away.
///
/// Not `Sendable`: `CacheIndex` keeps its only instance inside a `Locked`, so
/// one thread at a time uses it and every statement it prepares.
final class SQLiteConnection {
    // MARK: - Internal properties

    /// The path of the database file.
    let path: String

    /// The `sqlite3` handle, closed in `deinit`.
    let handle: OpaquePointer

    /// The number of rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int32 { sqlite3_changes(handle) }

    // MARK: - Init and deinit

    /// Opens, or creates, the database at `path`. Opening is lazy in SQLite:
    /// a file that is not a database is only noticed by the first statement.
    init(path: String, readOnly: Bool = false) throws(IndexError) {
        var connection: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX
        let result = sqlite3_open_v2(path, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) }
            sqlite3_close_v2(connection)
            throw IndexError(
                message: "could not open the cache index \(path)",
                sqliteMessage: message ?? String(cString: sqlite3_errstr(result)), code: result)
        }
        sqlite3_extended_result_codes(connection, 1)
        self.path = path
        self.handle = connection
    }

    deinit {
        // close_v2 defers the close until the last statement is finalized.
        sqlite3_close_v2(handle)
    }

    // MARK: - Internal methods

    /// Prepares one statement.
    func prepare(_ sql: String) throws(IndexError) -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Runs one or more statements that take no parameters.
    func execute(_ sql: String) throws(IndexError) {
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw error("could not update", code: result) }
    }

    /// The first column of the first row of `sql` as text, or `nil`.
    func scalarText(_ sql: String) throws(IndexError) -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.text(0) : nil
    }

    /// The first column of the first row of `sql` as an integer, or `nil`.
    func scalarInt64(_ sql: String) throws(IndexError) -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.optionalInt64(0) : nil
    }

    /// SQLite's own page cache, in KiB.
    static let defaultPageCache = 2000

    /// Runs `body`'s statements in one read transaction (`BEGIN` … `COMMIT`):
    /// one snapshot and one lock of the write-ahead log's index for all of
    /// them, where each statement alone takes and releases its own (two
    /// `fcntl`s a statement: two a file when a thousand shows register).
    func reading<Result>(_ body: () throws(IndexError) -> Result) throws(IndexError) -> Result {
        try execute("BEGIN")
        defer { _ = sqlite3_exec(handle, "COMMIT", nil, nil, nil) }
        return try body()
    }

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, rolling back if it
    /// throws. Immediate, so a second process waits (busy timeout) at the start
    /// rather than failing at the commit. `syncs` false: the commit is not
    /// synced on its own (`CacheIndex.register` says when that is safe);
    /// `body` may ask for the sync after all (`PRAGMA synchronous = FULL`).
    /// Every transaction says which it is, so a lazy one never leaves the
    /// connection lazy for the next.
    ///
    /// `pageCache`: KiB of page cache for this transaction, given back when
    /// it ends (SQLite's own is 2 MiB). For a registration of many new
    /// episodes: their keys are hashes, each on its own page of the key
    /// index, and with the small cache the transaction spills dirty pages to
    /// the write-ahead log and reads them back (bench/HISTORY.md).
    func transaction<Result>(
        syncs: Bool = true, pageCache: Int? = nil, _ body: () throws(IndexError) -> Result
    ) throws(IndexError) -> Result {
        try execute(syncs ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        if let pageCache { try execute("PRAGMA cache_size = -\(pageCache)") }
        defer {
            // Statements outside a transaction (a validator saved alone) sync
            // too; a failure here is the connection's, and its next statement
            // fails as well.
            if !syncs { _ = sqlite3_exec(handle, "PRAGMA synchronous = FULL", nil, nil, nil) }
            if pageCache != nil {
                _ = sqlite3_exec(handle, "PRAGMA cache_size = -\(Self.defaultPageCache)", nil, nil, nil)
                _ = sqlite3_db_release_memory(handle)
            }
        }
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            // The transaction may already be rolled back (e.g. SQLITE_FULL);
            // a failing ROLLBACK then says nothing new.
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// An `IndexError` for `result` with SQLite's current message, worded as
    /// "\(what) the cache index \(path)".
    func error(_ what: String, code result: Int32) -> IndexError {
        IndexError(
            message: "\(what) the cache index \(path)",
            sqliteMessage: String(cString: sqlite3_errmsg(handle)), code: result)
    }
}

@available(*, unavailable)
extension SQLiteConnection: Sendable {}
