import Foundation
import Locking
import RangeCache

/// How the last load or refresh of each feed went, kept in
/// `<cache-dir>/feed-status.json` for `podfs status` (which cannot ask the
/// daemon).
///
/// The file is replaced atomically (written aside, then renamed), so a
/// reader sees the previous or the next version, never half of one.
public final class FeedStatusStore: Sendable {
    // MARK: - Nested types

    /// One feed's last check.
    public struct Record: Codable, Sendable, Equatable {
        /// Seconds since the epoch.
        public var checkedAt: Int64
        public var ok: Bool
        /// "updated", "not modified", "loaded", or why it failed.
        public var detail: String

        public init(checkedAt: Int64, ok: Bool, detail: String) {
            self.checkedAt = checkedAt
            self.ok = ok
            self.detail = detail
        }
    }

    // MARK: - Properties

    /// The file's name inside the cache directory.
    public static let fileName = "feed-status.json"

    private let path: String
    /// Feed URL to its last record. Guarded by its lock, which also
    /// serialises writing the file.
    private let records = Locked<[String: Record]>([:])

    // MARK: - Init

    /// Starts from what the file already says (records of earlier mounts).
    public init(directory: String) {
        path = directory + "/" + Self.fileName
        let existing = Self.read(directory: directory)
        records.withLock { $0 = existing }
    }

    // MARK: - Methods

    /// Records how a feed's check went and rewrites the file. A failure to
    /// write is returned for the caller to log; the record stays in memory.
    @discardableResult
    public func record(url: String, ok: Bool, detail: String, at time: Int64? = nil) -> String? {
        let time = time ?? Int64(Date().timeIntervalSince1970)
        return records.withLock { records -> String? in
            records[url] = Record(checkedAt: time, ok: ok, detail: detail)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            do {
                let data = try encoder.encode(records)
                let aside = path + ".tmp"
                // Private like the rest of the cache: it names the feeds.
                let written = CachePrivacy.writeFile(aside, Array(data))
                guard written == 0 else { return "could not write \(aside): \(String(cString: strerror(written)))" }
                guard rename(aside, path) == 0 else {
                    return "could not replace \(path): \(String(cString: strerror(errno)))"
                }
                return nil
            } catch {
                return "could not write \(path): \(error.localizedDescription)"
            }
        }
    }

    /// The last record of `url`, if any.
    public func record(url: String) -> Record? {
        records.withLock { $0[url] }
    }

    /// The records in `directory`'s file; empty when there is none or it
    /// does not decode.
    public static func read(directory: String) -> [String: Record] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName) else { return [:] }
        return (try? JSONDecoder().decode([String: Record].self, from: data)) ?? [:]
    }
}
