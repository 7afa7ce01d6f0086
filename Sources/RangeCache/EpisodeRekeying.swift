/// Moves cached episodes to a new key in place, inside the caller's
/// registration transaction, with statements prepared once: a show first
/// known by its `podcast:guid` takes over what a cache made in its URL scope
/// holds (docs/DESIGN.md, "The cache on disk", keys). The row keeps its id,
/// ranges, validator and variant, and its data file gets the new name, so
/// nothing is fetched again.
///
/// The index never lists a byte that is not on disk, whenever a crash comes
/// (guarantee 1). Within the transaction the file gets its new name as a
/// second hard link, and the directory is synced; only then may the
/// transaction commit the row's new key, and only after the commit is the old
/// name removed (`finish(committed:)`). Until the commit the row is under the
/// old key and the old name is there; from the commit on the row is under
/// the new key and the new name is there. A rename instead, before or after
/// the commit, would leave a moment in which the index's row names a file
/// that is not there. A crash between the commit and the removal leaves the
/// old name behind as an orphan (no row owns it) that `podfs cache verify`
/// deletes; a crash or a rollback before the commit leaves the new name as
/// one, which the next take-over replaces.
struct EpisodeRekeying {
    // MARK: - Nested types

    /// What `take(from:to:)` did.
    enum Outcome {
        /// Nothing to move: the new key has a row, or the former has none.
        case unchanged
        case moved
        /// The file could not get its new name (a file system without hard
        /// links): the episode stays where it was.
        case refused(FileError)
    }

    // MARK: - Private properties

    private let find: SQLiteStatement
    private let move: SQLiteStatement
    private let forgetRanges: SQLiteStatement
    private let directory: String
    /// New names made in this transaction: removed again if it rolls back.
    private var linked: [String] = []
    /// Old names: removed once the transaction committed.
    private var superseded: [String] = []

    // MARK: - Init

    /// Prepares the statements on `db`, for the index in `directory`.
    init(_ db: SQLiteConnection, directory: String) throws(IndexError) {
        find = try db.prepare("SELECT id FROM episodes WHERE key = ?")
        move = try db.prepare("UPDATE episodes SET key = ? WHERE id = ?")
        forgetRanges = try db.prepare("DELETE FROM ranges WHERE episode_id = ?")
        self.directory = directory
    }

    // MARK: - Methods

    /// Moves the episode at `formerKey` to `key` when no row has `key` yet
    /// and one has `formerKey`; otherwise changes nothing (when both exist,
    /// both are kept as they are). An episode whose file cannot get its new
    /// name stays where it was and is fetched again under `key`.
    mutating func take(from formerKey: String, to key: String) throws(IndexError) -> Outcome {
        guard try id(of: key) == nil, let id = try id(of: formerKey) else { return .unchanged }
        let oldPath = directory + "/data/" + formerKey
        let newPath = directory + "/data/" + key
        if ScratchFile.exists(path: oldPath) {
            do {
                // No row has `key`: a file under its name is an orphan.
                try ScratchFile.remove(path: newPath)
                try ScratchFile.link(oldPath, to: newPath)
            } catch {
                return .refused(error)
            }
            do {
                try ScratchFile.synchronizeDirectory(directory + "/data")
            } catch {
                try? ScratchFile.remove(path: newPath)
                return .refused(error)
            }
            linked.append(newPath)
            superseded.append(oldPath)
        } else {
            // No file: the index can vouch for no byte of it.
            try forgetRanges.reset()
            try forgetRanges.bind(1, id)
            try forgetRanges.run()
        }
        try move.reset()
        try move.bind(1, key)
        try move.bind(2, id)
        try move.run()
        return .moved
    }

    /// Removes the names the transaction left behind: the old ones when it
    /// committed, else the new ones. A name that cannot be removed is an
    /// orphan for `podfs cache verify`.
    func finish(committed: Bool) {
        for path in committed ? superseded : linked {
            try? ScratchFile.remove(path: path)
        }
    }

    // MARK: - Private methods

    private func id(of key: String) throws(IndexError) -> Int64? {
        try find.reset()
        try find.bind(1, key)
        let id = try find.step() ? find.int64(0) : nil
        // Done with the row before the table is written.
        try find.reset()
        return id
    }
}
