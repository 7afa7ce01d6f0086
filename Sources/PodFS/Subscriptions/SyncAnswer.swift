import Feeds
import Foundation

/// Reads a sync server's JSON answers, trusting neither their size nor
/// their types.
///
/// An answer is refused whole (a `SyncAnswerError` saying why) when it is no
/// JSON object, lacks a list, holds a list that is no array of strings or
/// has more than `SyncLimits.maxEntries` entries, or carries a timestamp that
/// is not a whole number from 0 to `SyncLimits.maxTimestamp` (a string, a
/// fraction, `true` and `1e30` are all refused). Within a valid answer, a
/// string that is no http(s) URL, or longer than `maxURLBytes`, is skipped
/// and counted: other apps store odd entries, and one should not stop a sync.
public enum SyncAnswer {
    // MARK: - Public methods

    /// The answer to a pull: `{"add": [...], "remove": [...], "timestamp": T}`.
    public static func changes(_ body: [UInt8], limits: SyncLimits) throws(SyncAnswerError) -> ServerChanges {
        let object = try topObject(body)
        var skipped = 0
        var spellings: [String: String] = [:]
        let add = try urls(object, "add", limits: limits, skipped: &skipped, spellings: &spellings)
        let remove = try urls(object, "remove", limits: limits, skipped: &skipped, spellings: &spellings)
        guard let raw = object["timestamp"] else {
            throw SyncAnswerError(.missingField, "the answer has no \"timestamp\"")
        }
        let timestamp = try checkedTimestamp(raw, limits: limits)
        return ServerChanges(add: add, remove: remove, timestamp: timestamp, skipped: skipped, spellings: spellings)
    }

    /// The answer to a push: gpodder.net's `{"timestamp": T, "update_urls":
    /// [[old, new], ...]}`, or Nextcloud's `{"timestamp": T}`; an empty body
    /// (no answer to read) is a receipt with neither.
    public static func receipt(_ body: [UInt8], limits: SyncLimits) throws(SyncAnswerError) -> PushReceipt {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return PushReceipt(timestamp: nil)
        }
        let object = try topObject(body)
        var timestamp: Int64?
        if let raw = object["timestamp"] { timestamp = try checkedTimestamp(raw, limits: limits) }
        var renames: [PushReceipt.Rename] = []
        if let raw = object["update_urls"], !(raw is NSNull) {
            guard let pairs = raw as? [Any] else {
                throw SyncAnswerError(.wrongType, "\"update_urls\" is not a list")
            }
            guard pairs.count <= limits.maxEntries else {
                throw SyncAnswerError(
                    .tooMany, "\"update_urls\" has \(pairs.count) entries, more than the \(limits.maxEntries) taken")
            }
            for pair in pairs {
                guard let pair = pair as? [Any], pair.count == 2, let old = pair[0] as? String,
                    let new = pair[1] as? String
                else {
                    throw SyncAnswerError(.wrongType, "an entry of \"update_urls\" is not a pair of strings")
                }
                // gpodder.net answers an empty new URL for one it refused:
                // that is no reason to drop the listener's subscription.
                guard let from = url(old, limits: limits), let to = url(new, limits: limits), from != to else {
                    continue
                }
                renames.append(PushReceipt.Rename(from: from, to: to))
            }
        }
        return PushReceipt(timestamp: timestamp, renames: renames)
    }

    /// gpodder.net's devices: `[{"id", "caption", "type", "subscriptions"}]`.
    /// An entry with no string `id` is skipped; a missing caption is empty,
    /// a missing count 0.
    public static func devices(_ body: [UInt8], limits: SyncLimits) throws(SyncAnswerError) -> [SyncDevices.Device] {
        let parsed = try json(body)
        guard let list = parsed as? [Any] else { throw SyncAnswerError(.wrongType, "the device list is not a list") }
        guard list.count <= limits.maxEntries else {
            throw SyncAnswerError(.tooMany, "the device list has \(list.count) entries")
        }
        return list.compactMap { entry in
            guard let object = entry as? [String: Any], let id = object["id"] as? String, !id.isEmpty else { return nil }
            let count = (object["subscriptions"] as? NSNumber).map { max(0, $0.intValue) } ?? 0
            return SyncDevices.Device(id: id, caption: object["caption"] as? String ?? "", subscriptions: count)
        }
    }

    /// gpodder.net's sync groups: `{"synchronized": [[ids]], ...}`.
    public static func syncGroups(_ body: [UInt8], limits: SyncLimits) throws(SyncAnswerError) -> [[String]] {
        let object = try topObject(body)
        guard let groups = object["synchronized"] as? [Any], groups.count <= limits.maxEntries else { return [] }
        return groups.compactMap { ($0 as? [Any])?.compactMap { $0 as? String } }
    }

    // MARK: - Private methods

    private static func json(_ body: [UInt8]) throws(SyncAnswerError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw SyncAnswerError(.notJSON, "the answer is not JSON (\(body.count) bytes)")
        }
    }

    private static func topObject(_ body: [UInt8]) throws(SyncAnswerError) -> [String: Any] {
        let parsed = try json(body)
        guard let object = parsed as? [String: Any] else {
            throw SyncAnswerError(.notAnObject, "the answer is JSON but not an object")
        }
        return object
    }

    /// The list `key` as checked feed URLs, duplicates removed.
    private static func urls(
        _ object: [String: Any], _ key: String, limits: SyncLimits, skipped: inout Int, spellings: inout [String: String]
    ) throws(SyncAnswerError) -> [String] {
        guard let raw = object[key] else {
            throw SyncAnswerError(.missingField, "the answer has no \"\(key)\" list")
        }
        guard let list = raw as? [Any] else {
            throw SyncAnswerError(.wrongType, "\"\(key)\" is not a list")
        }
        // Counted before anything is read: an answer over the bound is
        // refused whole, never applied in part.
        guard list.count <= limits.maxEntries else {
            throw SyncAnswerError(
                .tooMany, "\"\(key)\" has \(list.count) entries, more than the \(limits.maxEntries) taken")
        }
        var seen = Set<String>()
        var result: [String] = []
        for entry in list {
            guard let text = entry as? String else {
                throw SyncAnswerError(.wrongType, "\"\(key)\" holds something that is not a string")
            }
            guard let checked = url(text, limits: limits) else {
                skipped += 1
                continue
            }
            if seen.insert(checked).inserted { result.append(checked) }
            if checked != text { spellings[checked] = text }
        }
        return result
    }

    private static func url(_ text: String, limits: SyncLimits) -> String? {
        guard text.utf8.count <= limits.maxURLBytes, let url = SourceList.feedURL(text),
            url.utf8.count <= limits.maxURLBytes
        else { return nil }
        return url
    }

    /// A JSON whole number in range: not a Bool (which Foundation also
    /// gives as a number), not a fraction, not a string.
    private static func checkedTimestamp(_ raw: Any, limits: SyncLimits) throws(SyncAnswerError) -> Int64 {
        guard let number = raw as? NSNumber, !(raw is String) else {
            throw SyncAnswerError(.badTimestamp, "the timestamp is not a number")
        }
        let type = String(cString: number.objCType)
        guard !["c", "C", "B", "d", "f"].contains(type), let value = raw as? Int64 else {
            throw SyncAnswerError(.badTimestamp, "the timestamp \(number) is not a whole number of seconds")
        }
        guard (0...limits.maxTimestamp).contains(value) else {
            throw SyncAnswerError(.badTimestamp, "the timestamp \(value) is out of range (0 to \(limits.maxTimestamp))")
        }
        return value
    }
}

/// Why a sync server's answer was refused whole.
public struct SyncAnswerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, as a stable code.
    public enum Code: String, Sendable {
        case notJSON = "not-json"
        case notAnObject = "not-an-object"
        case missingField = "missing-field"
        case wrongType = "wrong-type"
        case tooMany = "too-many"
        case badTimestamp = "bad-timestamp"
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
