internal import CSQLite

/// A failure of the cache index, with what podfs was doing, SQLite's own
/// message and result code, and a hint a person can act on.
public struct IndexError: Error, Sendable {
    // MARK: - Public properties

    /// What podfs was doing, naming the file: "could not open the cache index
    /// /home/a/.cache/podfs/index.sqlite".
    public let message: String

    /// SQLite's explanation (`sqlite3_errmsg`) or the system's (`strerror`),
    /// if there was one.
    public let sqliteMessage: String?

    /// SQLite's extended result code, or 0 when the failure did not come from
    /// SQLite.
    public let code: Int32

    /// Whether the disk (or quota) is full: SQLite could not grow the
    /// index or its write-ahead log.
    public var isNoSpace: Bool {
        code & 0xff == SQLITE_FULL
    }

    // MARK: - Internal properties

    /// Whether the file is not a database or is damaged, which `CacheIndex`
    /// cures by moving the file aside and starting afresh.
    var isCorruption: Bool {
        let primary = code & 0xff
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }

    // MARK: - Init

    /// Creates an error; `code` is an SQLite result code or 0.
    public init(message: String, sqliteMessage: String?, code: Int32) {
        self.message = message
        self.sqliteMessage = sqliteMessage
        self.code = code
    }

    // MARK: - Private properties

    /// A hint for the causes a person can fix, or `nil`.
    private var remedy: String? {
        switch code & 0xff {
        case SQLITE_FULL:
            "Free space or lower --cache-size."
        case SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            "Check that the cache directory is writable, or choose another with --cache-dir."
        case SQLITE_BUSY, SQLITE_LOCKED:
            "Another podfs process is holding the cache index; wait for it to finish or use another --cache-dir."
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            "Run `podfs cache clear` or delete the index; podfs builds a fresh one and refetches what it needs."
        case SQLITE_IOERR:
            "The disk reported an error; check it (dmesg) or move the cache with --cache-dir."
        default:
            nil
        }
    }
}

// MARK: - CustomStringConvertible

extension IndexError: CustomStringConvertible {
    /// For example: "could not open the cache index /x/index.sqlite: unable
    /// to open database file (SQLite code 14). Check that the cache directory
    /// is writable, or choose another with --cache-dir."
    public var description: String {
        var sentence = message
        if let sqliteMessage {
            sentence += ": \(sqliteMessage)"
        }
        if code != 0 {
            sentence += " (SQLite code \(code))"
        }
        sentence += "."
        if let remedy {
            sentence += " " + remedy
        }
        return sentence
    }
}
