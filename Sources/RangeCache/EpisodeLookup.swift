/// Reads episode records by key with statements prepared once (a mount
/// registers thousands in one transaction), from an index of version
/// `schema` (a read-only open may see one not yet migrated).
struct EpisodeLookup {
    // MARK: - Properties

    private let query: SQLiteStatement
    private let ranges: SQLiteStatement
    private let schema: Int64

    // MARK: - Initializers

    init(_ db: SQLiteConnection, schema: Int64) throws(IndexError) {
        let variantColumns = schema >= 2 ? ", pinned_url, pinned_issuer, unstable, final" : ""
        query = try db.prepare(
            "SELECT id, url, length, etag, last_modified\(variantColumns) FROM episodes WHERE key = ?")
        ranges = try db.prepare("SELECT lower, upper FROM ranges WHERE episode_id = ? ORDER BY lower")
        self.schema = schema
    }

    // MARK: - Methods

    /// The episode's row and ranges, or `nil` when no row has `key`.
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
        var record = EpisodeRecord(
            id: id, key: key, url: query.text(1) ?? "", length: length,
            etag: query.text(3), lastModified: query.text(4), ranges: found)
        if schema >= 2 {
            record.variant = EpisodeVariant(
                pinnedURL: query.text(5), pinnedIssuer: query.text(6), unstable: query.text(7),
                isFinal: query.int64(8) != 0)
        }
        return record
    }
}
