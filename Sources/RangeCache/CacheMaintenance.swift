#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
public import Logging

/// `podfs cache verify` and `podfs cache clear` on a cache no mount is
/// using (the caller holds the cache directory's lock).
///
/// Both keep the durable order of the read path: the index forgets ranges
/// first, then files are deleted, so a crash in between leaves at most a file
/// the index no longer lists (an orphan the next `verify` deletes), never a
/// listed byte that is gone.
public final class CacheMaintenance {
    // MARK: - Private properties

    private let index: CacheIndex
    private let logger: Logger

    // MARK: - Init

    public init(index: CacheIndex, logger: Logger) {
        self.index = index
        self.logger = logger
    }

    // MARK: - Verify

    /// Checks every episode's listed ranges against its scratch file (the
    /// length is known, ranges lie inside it, the file exists, has that
    /// length and holds data, not holes, where ranges are listed) and every
    /// file in `data/` against the index. Repairs by forgetting what it
    /// cannot vouch for and deleting files no episode owns.
    public func verify() throws(IndexError) -> CacheVerification {
        var result = CacheVerification()
        if let moved = index.damagedIndexMovedTo {
            result.findings.append(CacheFinding(
                kind: .damagedIndex, key: "index.sqlite", problem: "the index file was damaged",
                repair: "moved it to \(moved) and started a new, empty index"))
        }
        let records = try index.snapshot().flatMap(\.episodes)
        result.episodes = records.count
        var changes: [(key: String, ranges: [Range<Int64>])] = []
        var doomedFiles: [String] = []
        for record in records where !record.ranges.isEmpty {
            var ranges = RangeSet(record.ranges)
            let listed = record.ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
            result.listedBytes += listed
            let path = index.dataPath(forKey: record.key)
            func forgetAll(_ kind: CacheFinding.Kind, _ problem: String, deleteFile: Bool) {
                changes.append((key: record.key, ranges: []))
                if deleteFile { doomedFiles.append(path) }
                result.findings.append(CacheFinding(
                    kind: kind, key: record.key, problem: problem,
                    repair: "forgot its \(Self.bytes(listed)) of cached ranges" + (deleteFile ? " and deleted the file" : ""),
                    forgottenBytes: listed))
            }
            guard let length = record.length else {
                forgetAll(.rangesWithoutLength, "the index lists cached bytes but not the episode's length", deleteFile: true)
                continue
            }
            if let bad = record.ranges.first(where: { $0.lowerBound < 0 || $0.upperBound > length }) {
                forgetAll(
                    .rangeOutsideEpisode,
                    "the index lists bytes \(bad.lowerBound)-\(bad.upperBound) of an episode of \(length) bytes",
                    deleteFile: true)
                continue
            }
            let file: ScratchFile
            do {
                file = try ScratchFile(existingAt: path)
            } catch where error.errno == ENOENT {
                forgetAll(.missingFile, "the index lists \(Self.bytes(listed)) but the cache file is missing", deleteFile: false)
                continue
            } catch {
                forgetAll(.unreadableFile, "the cache file cannot be opened: \(error)", deleteFile: false)
                continue
            }
            do {
                let size = try file.currentLength()
                if size != length {
                    forgetAll(
                        .wrongFileLength, "the cache file has \(size) bytes, the episode \(length)", deleteFile: true)
                    continue
                }
                var holes: [Range<Int64>] = []
                for range in ranges.ranges { holes += try file.holes(in: range) }
                if !holes.isEmpty {
                    for hole in holes { ranges.remove(hole) }
                    changes.append((key: record.key, ranges: ranges.ranges))
                    let lost = listed - ranges.count
                    let first = holes[0]
                    result.findings.append(CacheFinding(
                        kind: .holeInListedRange, key: record.key,
                        problem: "\(Self.bytes(lost)) listed as cached are holes in the cache file (first at bytes "
                            + "\(first.lowerBound)-\(first.upperBound))",
                        repair: "forgot those bytes, kept the other \(Self.bytes(ranges.count))", forgottenBytes: lost))
                }
            } catch {
                forgetAll(.unreadableFile, "the cache file cannot be inspected: \(error)", deleteFile: false)
                continue
            }
            result.vouchedBytes += ranges.count
        }
        // Index first, then files.
        try index.commitRanges(changes)
        for path in doomedFiles { removeLogging(path) }
        verifyFiles(known: Set(records.map(\.key)), into: &result)
        return result
    }

    /// Every file in `data/` against the index (`verify`): a file no
    /// episode owns is deleted; anything else there is left alone.
    private func verifyFiles(known: Set<String>, into result: inout CacheVerification) {
        for entry in Self.listDirectory(index.directory + "/data") {
            result.files += 1
            guard !known.contains(entry.name) else { continue }
            let path = index.directory + "/data/" + entry.name
            guard entry.isRegularFile else {
                result.findings.append(CacheFinding(
                    kind: .orphanFile, key: entry.name, problem: "data/\(entry.name) is not a cache file",
                    repair: "left it alone (remove it by hand)"))
                continue
            }
            removeLogging(path)
            result.deletedFileBytes += entry.diskBytes
            result.findings.append(CacheFinding(
                kind: .orphanFile, key: entry.name, problem: "no episode in the index owns data/\(entry.name)",
                repair: "deleted it (\(Self.bytes(entry.diskBytes)) on disk)"))
        }
    }

    // MARK: - Clear

    /// Forgets the cached bytes of the episodes with `keys` (every episode
    /// when `nil`, and then any other file in `data/` too) and deletes their
    /// scratch files. Feeds, episode names and validators stay, so a mount
    /// still lists them (also offline) and fetches again what is read.
    /// `sparing`: keys kept whatever `keys` says (pinned episodes).
    public func clear(keys: Set<String>?, sparing: Set<String> = []) throws(IndexError) -> CacheClearing {
        var result = CacheClearing()
        let records = try index.snapshot().flatMap(\.episodes).filter {
            (keys?.contains($0.key) ?? true) && !sparing.contains($0.key)
        }
        result.episodes = records.count
        result.forgottenBytes = records.reduce(Int64(0)) { total, record in
            total + record.ranges.reduce(Int64(0)) { $0 + Int64($1.count) }
        }
        try index.dropRanges(keys: records.map(\.key))
        let wanted = keys ?? Set(records.map(\.key))
        for entry in Self.listDirectory(index.directory + "/data") where entry.isRegularFile {
            guard keys == nil || wanted.contains(entry.name), !sparing.contains(entry.name) else { continue }
            if removeLogging(index.directory + "/data/" + entry.name) {
                result.files += 1
                result.freedBytes += entry.diskBytes
            }
        }
        return result
    }

    // MARK: - Private methods

    @discardableResult
    private func removeLogging(_ path: String) -> Bool {
        do {
            try ScratchFile.remove(path: path)
            return true
        } catch {
            logger.error("\(error)")
            return false
        }
    }

    /// The entries of a directory (not `.` and `..`), with whether each is a
    /// regular file and the space it takes on disk.
    private static func listDirectory(_ path: String) -> [(name: String, isRegularFile: Bool, diskBytes: Int64)] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var result: [(name: String, isRegularFile: Bool, diskBytes: Int64)] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            var status = stat()
            guard lstat(path + "/" + name, &status) == 0 else { continue }
            let isRegular = (status.st_mode & S_IFMT) == S_IFREG
            result.append((name, isRegular, Int64(status.st_blocks) * 512))
        }
        return result.sorted { $0.name < $1.name }
    }

    /// "3.0 MiB", "512 B".
    public static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        guard unit > 0 else { return "\(count) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
