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
        /// The mount asked for the feed and has no answer yet (`nil` in
        /// files of older versions: not pending). `ok` and `detail` then
        /// tell how the check before went.
        public var pending: Bool?

        public init(checkedAt: Int64, ok: Bool, detail: String, pending: Bool? = nil) {
            self.checkedAt = checkedAt
            self.ok = ok
            self.detail = detail
            self.pending = pending
        }
    }

    /// The records and when the file was last written. Guarded by its
    /// lock.
    private struct State {
        var records: [String: Record] = [:]
        var dirty = false
        var writtenAt = 0.0
    }

    // MARK: - Properties

    /// The file's name inside the cache directory.
    public static let fileName = "feed-status.json"

    /// At most this many seconds pass between a record and the file
    /// showing it while records keep coming (a round of a thousand feeds
    /// writes the file a few times, not a thousand). A round flushes each
    /// second too; each write encodes every feed's record (a thousand
    /// feeds: 2 % of a cold mount's CPU at two writes a second).
    public static let writeInterval = 1.0

    private let path: String
    /// Feed URL to its last record. Guarded by its lock, which also
    /// serialises writing the file.
    private let state = Locked(State())

    // MARK: - Init

    /// Starts from what the file already says (records of earlier mounts).
    public init(directory: String) {
        path = directory + "/" + Self.fileName
        let existing = Self.read(directory: directory)
        state.withLock { $0.records = existing }
    }

    // MARK: - Methods

    /// Records how a feed's check went; the file is rewritten unless it
    /// was less than `writeInterval` ago (then `flush` writes it). A failure
    /// to write is returned for the caller to log; the record stays in
    /// memory.
    @discardableResult
    public func record(url: String, ok: Bool, detail: String, at time: Int64? = nil) -> String? {
        let time = time ?? Int64(Date().timeIntervalSince1970)
        return state.withLock { state -> String? in
            state.records[url] = Record(checkedAt: time, ok: ok, detail: detail)
            state.dirty = true
            guard Date().timeIntervalSince1970 - state.writtenAt >= Self.writeInterval else { return nil }
            return write(&state)
        }
    }

    /// Marks feeds as asked for and not answered yet, keeping how their
    /// last check went; writes the file.
    @discardableResult
    public func markPending(urls: [String], at time: Int64? = nil) -> String? {
        let time = time ?? Int64(Date().timeIntervalSince1970)
        return state.withLock { state -> String? in
            for url in urls {
                var record = state.records[url] ?? Record(checkedAt: time, ok: false, detail: "never loaded")
                record.pending = true
                state.records[url] = record
            }
            state.dirty = true
            return write(&state)
        }
    }

    /// Forgets the records of feeds no longer subscribed; writes the file.
    @discardableResult
    public func forget(urls: [String]) -> String? {
        state.withLock { state -> String? in
            for url in urls { state.records[url] = nil }
            return write(&state)
        }
    }

    /// Writes what `record` left unwritten, if anything.
    @discardableResult
    public func flush() -> String? {
        state.withLock { state in state.dirty ? write(&state) : nil }
    }

    /// The last record of `url`, if any.
    public func record(url: String) -> Record? {
        state.withLock { $0.records[url] }
    }

    /// Every record, by feed URL.
    public var records: [String: Record] {
        state.withLock { $0.records }
    }

    // MARK: - Private methods

    private func write(_ state: inout State) -> String? {
        state.dirty = false
        state.writtenAt = Date().timeIntervalSince1970
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(state.records)
            // Private like the rest of the cache: it names the feeds.
            return CachePrivacy.replaceFile(path, Array(data))
        } catch {
            return "could not write \(path): \(error.localizedDescription)"
        }
    }

    // MARK: - Reading the file

    /// The records in `directory`'s file; empty when there is none or it
    /// does not decode.
    public static func read(directory: String) -> [String: Record] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName) else { return [:] }
        return (try? JSONDecoder().decode([String: Record].self, from: data)) ?? [:]
    }
}
