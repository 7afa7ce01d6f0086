import Foundation

/// What `podfs status --json` says about each episode, by file name.
struct CacheStatus {
    struct Entry {
        var key: String
        var feedTitle: String
        var cachedBytes: Int
        /// When it was last read (seconds since the epoch), if ever.
        var lastRead: Int?
    }

    let entries: [String: Entry]

    /// Runs `podfs status --json` on `cacheDirectory`.
    init(_ cacheDirectory: String) throws {
        let output = try Harness.run(Harness.podfs, ["status", "--cache-dir", cacheDirectory, "--json"])
        guard output.status == 0 else { throw HarnessError("podfs status failed: \(output.stderr)") }
        let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        var entries: [String: Entry] = [:]
        for feed in object?["feeds"] as? [[String: Any]] ?? [] {
            let title = feed["title"] as? String ?? ""
            for episode in feed["episodes"] as? [[String: Any]] ?? [] {
                guard let name = episode["name"] as? String, let key = episode["key"] as? String else { continue }
                entries[name] = Entry(
                    key: key, feedTitle: title, cachedBytes: (episode["cachedBytes"] as? NSNumber)?.intValue ?? -1,
                    lastRead: (episode["lastRead"] as? NSNumber)?.intValue)
            }
        }
        self.entries = entries
    }

    subscript(name: String) -> Entry? { entries[name] }

    /// Cached bytes by file name.
    var cached: [String: Int] { entries.mapValues(\.cachedBytes) }
}

extension Fixture {
    /// The file name of episode `index` (as in `path(_:)`).
    func name(_ index: Int) -> String {
        (path(index) as NSString).lastPathComponent
    }

    /// Runs Tests/Origin/check_index.py for the origin file `file`: every
    /// range the index lists for it is on disk with the origin's bytes.
    /// Returns the bytes claimed, or throws with the script's complaint.
    @discardableResult
    func checkIndex(file: String) throws -> Int {
        let output = try Harness.run(
            "python3",
            [Harness.root + "/Tests/Origin/check_index.py", cacheDirectory, origin.root + "/" + file,
             "--key-url", "\(origin.base)/\(file)"])
        guard output.status == 0 else {
            throw HarnessError("index check of \(file): \(output.text) \(output.stderr)")
        }
        return Int(output.text.split(separator: " ").dropFirst(2).first ?? "") ?? -1
    }

    /// `checkIndex(file:)` for episode `index`.
    @discardableResult
    func checkIndex(_ index: Int) throws -> Int {
        try checkIndex(file: episodes[index].file)
    }
}
