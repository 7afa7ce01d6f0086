internal import CSQLite

/// One prepared SQLite statement, finalized when this object goes away.
///
/// Used only by `SQLiteConnection` and `CacheIndex` while they hold the
/// index's lock, so it is bound to one thread at a time and not `Sendable`.
/// Binding copies text and blobs (`SQLITE_TRANSIENT`), so the Swift values
/// need not outlive the call.
final class SQLiteStatement {
    // MARK: - Private properties

    /// The `sqlite3_stmt`, finalized in `deinit`.
    private let handle: OpaquePointer

    /// The connection, kept alive for as long as the statement is.
    private let connection: SQLiteConnection

    /// The SQL text, for error messages.
    private let sql: String

    // MARK: - Init and deinit

    /// Prepares `sql` (one statement) on `connection`.
    init(connection: SQLiteConnection, sql: String) throws(IndexError) {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw connection.error("could not prepare a query on", code: result)
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    // MARK: - Binding

    /// Binds `value` to the 1-based parameter `index`.
    func bind(_ index: Int32, _ value: Int64) throws(IndexError) {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds `value`, or NULL, to the 1-based parameter `index`.
    func bind(_ index: Int32, _ value: Int64?) throws(IndexError) {
        guard let value else { return try check(sqlite3_bind_null(handle, index)) }
        try bind(index, value)
    }

    /// Binds `value`, or NULL, to the 1-based parameter `index`.
    func bind(_ index: Int32, _ value: String?) throws(IndexError) {
        guard let value else { return try check(sqlite3_bind_null(handle, index)) }
        let length = Int32(value.utf8.count)
        try check(value.withCString { podfs_sqlite3_bind_text(handle, index, $0, length) })
    }

    /// Binds `value` as a blob (an empty blob, not NULL, when it is empty).
    func bind(_ index: Int32, _ value: [UInt8]) throws(IndexError) {
        guard !value.isEmpty else { return try check(sqlite3_bind_zeroblob(handle, index, 0)) }
        try check(
            value.withUnsafeBytes {
                podfs_sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count))
            })
    }

    // MARK: - Stepping

    /// Advances to the next row; returns `false` when the statement is done.
    @discardableResult
    func step() throws(IndexError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw connection.error("could not run a query on", code: result)
        }
    }

    /// Makes the statement ready to run again with new bindings.
    func reset() throws(IndexError) {
        sqlite3_reset(handle)
        try check(sqlite3_clear_bindings(handle))
    }

    /// Runs the statement to completion, ignoring any rows.
    func run() throws(IndexError) {
        while try step() {}
    }

    // MARK: - Columns

    /// Whether the 0-based column `index` of the current row is NULL.
    func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// The 0-based column `index` of the current row as an integer.
    func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    /// The 0-based column `index` of the current row, or `nil` when NULL.
    func optionalInt64(_ index: Int32) -> Int64? {
        isNull(index) ? nil : int64(index)
    }

    /// The 0-based column `index` of the current row as text, or `nil` when
    /// NULL.
    func text(_ index: Int32) -> String? {
        guard !isNull(index), let bytes = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The 0-based column `index` of the current row as bytes, or `nil` when
    /// NULL.
    func blob(_ index: Int32) -> [UInt8]? {
        guard !isNull(index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
    }

    // MARK: - Private methods

    /// Throws unless `result` is `SQLITE_OK`.
    private func check(_ result: Int32) throws(IndexError) {
        guard result == SQLITE_OK else {
            throw connection.error("could not bind a query parameter on", code: result)
        }
    }
}

@available(*, unavailable)
extension SQLiteStatement: Sendable {}
