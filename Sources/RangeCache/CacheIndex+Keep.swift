/// What a user chose to keep offline (docs/DESIGN.md, "Offline by policy"):
/// a show's own number of newest episodes, by the show's identity, and the
/// pinned episodes, by key. Kept apart from the cached bytes: a setting
/// outlives an eviction, a `cache clear` and a feed's move.
public struct KeepSettings: Sendable, Equatable {
    /// A show's own N (0 included), by `CacheScope.keyScope`; a show not
    /// here keeps the mount's N.
    public var showLatest: [String: Int]
    /// Keys of the pinned episodes.
    public var pinned: Set<String>

    public init(showLatest: [String: Int] = [:], pinned: Set<String> = []) {
        self.showLatest = showLatest
        self.pinned = pinned
    }
}

extension CacheIndex {
    // MARK: - Methods

    /// Every keep setting. An index read as it is by `podfs status` may be
    /// older than the settings: it has none.
    public func keepSettings() throws(IndexError) -> KeepSettings {
        guard schemaVersion >= 3 else { return KeepSettings() }
        return try connection.withLock { db throws(IndexError) -> KeepSettings in
            var settings = KeepSettings()
            let shows = try db.prepare("SELECT show, latest FROM kept_shows")
            while try shows.step() {
                if let show = shows.text(0) { settings.showLatest[show] = Int(clamping: shows.int64(1)) }
            }
            let pins = try db.prepare("SELECT key FROM pinned_episodes")
            while try pins.step() {
                if let key = pins.text(0) { settings.pinned.insert(key) }
            }
            return settings
        }
    }

    /// Sets a show's own N, or forgets it (`nil`: the mount's N again).
    public func setShowLatest(_ latest: Int?, show: String) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            let statement: SQLiteStatement
            if let latest {
                statement = try db.prepare(
                    "INSERT INTO kept_shows (show, latest) VALUES (?, ?) "
                        + "ON CONFLICT (show) DO UPDATE SET latest = excluded.latest")
                try statement.bind(1, show)
                try statement.bind(2, Int64(latest))
            } else {
                statement = try db.prepare("DELETE FROM kept_shows WHERE show = ?")
                try statement.bind(1, show)
            }
            try statement.run()
        }
    }

    /// Pins or unpins the episode with `key`.
    public func setPinned(_ pinned: Bool, key: String) throws(IndexError) {
        try connection.withLock { db throws(IndexError) in
            let statement = try db.prepare(
                pinned
                    ? "INSERT OR IGNORE INTO pinned_episodes (key) VALUES (?)"
                    : "DELETE FROM pinned_episodes WHERE key = ?")
            try statement.bind(1, key)
            try statement.run()
        }
    }
}
