import ArgumentParser
import Foundation

/// Which directory a command may use as its cache. podfs gives every entry
/// of its cache private modes (`CachePrivacy.tighten`) and `podfs cache
/// clear` deletes the files under it, so a directory that holds someone
/// else's files is refused, not taken: an empty `--cache-dir ""` (an unset
/// variable), which would name the working directory, or a folder of
/// documents given by mistake.
enum CacheDirectoryChoice {
    // MARK: - Nested types

    /// What a directory is, by its entries' names.
    enum Kind: Equatable {
        /// It does not exist: it will be made.
        case missing
        case empty
        /// podfs's own (a mount's, or the list of a `podfs subscribe`).
        case cache
        /// It holds these entries, which are not podfs's (sorted).
        case foreign([String])
    }

    // MARK: - Properties

    /// Any of these makes a directory a podfs cache: a mount's index, the
    /// subscriptions of `podfs subscribe`.
    static let markers: Set<String> = ["index.sqlite", "subscriptions.txt"]

    /// The other entries podfs makes at the top of its cache: a directory
    /// holding only these (a mount that stopped early) is podfs's too.
    static let ownNames: Set<String> = [
        "index.sqlite-wal", "index.sqlite-shm", "index.sqlite-journal", "data", "lock", "podfs.log", "reserve",
        "cache-size", "control.sock", "feed-issuers.json", "feed-issuers.json.tmp", "feed-moves.json",
        "feed-status.json", "keeping.json", "shows.json", "status.json", "sync-state.json", "sync-status.json",
        "subscriptions.lock", "subscriptions.path", "subscriptions.seed", "rehearsal",
        // A file system's own, when the cache is a volume of its own.
        "lost+found",
    ]

    // MARK: - Methods

    /// The kind of a directory whose entries are `names` (without `.` and
    /// `..`).
    static func kind(ofEntries names: [String]) -> Kind {
        if names.isEmpty { return .empty }
        if names.contains(where: markers.contains) { return .cache }
        let others = names.filter { !ownNames.contains($0) && !$0.hasSuffix(".tmp") }.sorted()
        return others.isEmpty ? .cache : .foreign(others)
    }

    /// The absolute cache directory for `chosen` (the option, else the
    /// default); else says on standard error why it will not do and what
    /// to give instead, and throws `ExitCode(1)`.
    static func resolve(_ chosen: String) throws -> String {
        do {
            return try check(chosen)
        } catch let error as ValidationError {
            Console.error("podfs: \(error.message)\n")
            throw ExitCode(1)
        }
    }

    /// The absolute cache directory for `chosen`, or a `ValidationError`
    /// that says why it will not do and what to give instead.
    static func check(_ chosen: String) throws -> String {
        guard !chosen.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ValidationError(
                "the cache directory is empty (an unset variable?); give one, e.g. --cache-dir ~/.cache/podfs, "
                    + "or leave the option out for the default")
        }
        let directory = absolutePath(chosen)
        var info = stat()
        guard stat(directory, &info) == 0 else {
            if errno == ENOENT { return directory }
            throw ValidationError("cannot use the cache directory \(directory): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ValidationError(
                "the cache directory \(directory) is a file, not a directory; give a directory with --cache-dir DIR")
        }
        // The system's words ("Permission denied"), not Foundation's.
        let names: [String]
        do {
            guard access(directory, R_OK | X_OK) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EACCES) }
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            let reason = (error as? POSIXError).map { String(cString: strerror($0.code.rawValue)) } ?? error.localizedDescription
            throw ValidationError(
                "cannot read the cache directory \(directory): \(reason); "
                    + "give one you can read and write with --cache-dir DIR")
        }
        if case .foreign(let others) = kind(ofEntries: names) {
            throw ValidationError(
                "\(directory) is not a podfs cache: it holds other files (\(others.prefix(5).joined(separator: ", "))"
                    + "\(others.count > 5 ? ", ..." : "")). podfs makes everything in its cache private "
                    + "and 'podfs cache clear' deletes what is there, so it uses only an empty or new directory; "
                    + "give one with --cache-dir DIR")
        }
        return directory
    }
}
