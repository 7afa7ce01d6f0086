import Feeds
import Foundation
import RangeCache

/// Where a mount's subscriptions live, and their edits (docs/DESIGN.md,
/// "Subscriptions").
///
/// One list per cache: when a mount's SOURCE is one file (OPML or a URL
/// list), that file is the list; otherwise (URLs on the command line,
/// several files, or no SOURCE) it is `subscriptions.txt` in the cache
/// directory, seeded with the command line's feeds (`SubscriptionSeed`). The cache
/// remembers which one the last mount used (`subscriptions.path`), so
/// `podfs subscribe` with no mount running and `podfs mount MOUNTPOINT`
/// with no SOURCE find it. Every edit keeps the file's comments and other
/// lines and replaces it atomically (written aside, then renamed).
struct SubscriptionList: Sendable {
    // MARK: - Nested types

    /// Why the list could not be read or changed, as a sentence.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: - Properties

    static let cacheFileName = "subscriptions.txt"
    static let locationFileName = "subscriptions.path"
    /// The feeds the last mount command named (`SubscriptionSeed`).
    static let seedFileName = "subscriptions.seed"

    /// The list file.
    let path: String
    /// Whether the list is the user's own SOURCE file (else the cache's).
    let isSourceFile: Bool
    let cacheDirectory: String

    // MARK: - Finding the list

    /// The list of a mount of `sources` (absolute paths or URLs) and its
    /// feeds, recorded as the cache's list from now on. Throws a sentence
    /// naming a SOURCE that cannot be used.
    static func forMount(sources: [String], cacheDirectory: String) throws(Failure) -> (SubscriptionList, [String]) {
        if sources.count == 1, !FeedSources.isLink(sources[0]) {
            let list = SubscriptionList(path: sources[0], isSourceFile: true, cacheDirectory: cacheDirectory)
            let urls: [String]
            do {
                urls = try FeedSources.urls(sources)
            } catch {
                throw Failure(description: error.message)
            }
            list.record()
            return (list, urls)
        }
        if sources.isEmpty {
            let list = current(cacheDirectory: cacheDirectory)
            list.record()
            return (list, try list.urls())
        }
        let list = SubscriptionList(
            path: cacheDirectory + "/" + cacheFileName, isSourceFile: false, cacheDirectory: cacheDirectory)
        let given: [String]
        do {
            given = try FeedSources.urls(sources)
        } catch {
            throw Failure(description: error.message)
        }
        let current = try list.urls()
        let change = SubscriptionSeed.change(list: current, seed: list.seed(), commandLine: given)
        for url in change.dropped { _ = try list.remove(url: url) }
        for url in change.added { _ = try list.add(url: url, title: nil) }
        list.saveSeed(given)
        list.record()
        return (list, try list.urls())
    }

    /// The list the last mount of this cache used (the cache's own when no
    /// mount recorded one, or its file is gone).
    static func current(cacheDirectory: String) -> SubscriptionList {
        let recorded = FileManager.default.contents(atPath: cacheDirectory + "/" + locationFileName)
            .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        if let recorded, recorded.hasPrefix("/"), FileManager.default.fileExists(atPath: recorded),
            recorded != cacheDirectory + "/" + cacheFileName
        {
            return SubscriptionList(path: recorded, isSourceFile: true, cacheDirectory: cacheDirectory)
        }
        return SubscriptionList(
            path: cacheDirectory + "/" + cacheFileName, isSourceFile: false, cacheDirectory: cacheDirectory)
    }

    // MARK: - Reading

    /// The feeds listed, in order, each once: a feed the file lists in two
    /// spellings (by hand) is one subscription, the first's
    /// (`SourceList.feedIdentity`). A cache list not made yet is empty.
    func urls() throws(Failure) -> [String] {
        var seen = Set<String>()
        return try file().urls.filter { seen.insert(SourceList.feedIdentity($0)).inserted }
    }

    /// The title the list gives each feed where it gives one: what
    /// `subscribe` wrote, or an OPML outline's.
    func titles() -> [String: String] {
        (try? file().titles) ?? [:]
    }

    /// What identifies the file's content now (inode, size, time), to see
    /// an edit made by hand or by another program.
    func signature() -> [Int] {
        var info = stat()
        guard stat(path, &info) == 0 else { return [] }
        return [
            Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec,
            info.st_ctim.tv_sec, info.st_ctim.tv_nsec,
        ]
    }

    // MARK: - Editing

    /// Adds `url` at the end of the list; false when it is listed already.
    func add(url: String, title: String?) throws(Failure) -> Bool {
        try exclusively { () throws(Failure) -> Bool in try adding(url: url, title: title) }
    }

    /// The spelling under which the list holds the feed of `url`, if it
    /// holds it in any (`SubscriptionFile.listed`): a subscription names
    /// its feed that way, so a second spelling is not a second show.
    func listed(_ url: String) -> String? {
        (try? file())?.listed(url)
    }

    /// Takes `url` out of the list; false when it was not listed.
    func remove(url: String) throws(Failure) -> Bool {
        try exclusively { () throws(Failure) -> Bool in try removing(url: url) }
    }

    // MARK: - Private methods

    private func adding(url: String, title: String?) throws(Failure) -> Bool {
        var file = try file()
        guard file.add(url: url, title: title) else {
            if file.listed(url) != nil { return false }
            throw Failure(
                description: "podfs cannot add a feed to \(path) (an OPML file needs a <body>, and the file must "
                    + "be UTF-8); add \(FeedURL.redacted(url, for: .display)) to it by hand")
        }
        try write(file.bytes)
        return true
    }

    private func removing(url: String) throws(Failure) -> Bool {
        var file = try file()
        guard file.remove(url: url) else {
            guard file.listed(url) != nil else { return false }
            throw Failure(
                description: "podfs cannot take \(FeedURL.redacted(url, for: .display)) out of \(path) (an OPML outline that holds other "
                    + "outlines, or a file that is not UTF-8); remove it by hand")
        }
        try write(file.bytes)
        return true
    }

    /// Runs one read-modify-write of the list under the cache's list lock,
    /// so two commands (or a command and a starting mount) never lose each
    /// other's edit.
    private func exclusively<Result>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        // A cache not used yet: the list is its first file.
        _ = CachePrivacy.makeDirectory(cacheDirectory)
        let lock = open(cacheDirectory + "/subscriptions.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lock >= 0 { flock(lock, LOCK_EX) }
        defer { if lock >= 0 { close(lock) } }
        return try body()
    }

    private func file() throws(Failure) -> SubscriptionFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            if !isSourceFile, !FileManager.default.fileExists(atPath: path) {
                return try! SubscriptionFile(bytes: [])
            }
            throw Failure(description: "the subscription list \(path) cannot be read")
        }
        do {
            return try SubscriptionFile(bytes: Array(data))
        } catch {
            throw Failure(description: "the subscription list \(path) is not an OPML file or a list of URLs: \(error.message)")
        }
    }

    /// Replaces the file in one step, keeping its permissions; a symbolic
    /// link (a list kept in a dotfiles repository) stays one, and its
    /// target is replaced.
    private func write(_ bytes: [UInt8]) throws(Failure) {
        let path = realpath(self.path, nil).map { resolved in
            defer { free(resolved) }
            return String(cString: resolved)
        } ?? self.path
        var info = stat()
        let mode = stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o600
        let aside = path + ".podfs-new-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(aside, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw Failure(description: "could not write the subscription list next to \(path): \(String(cString: strerror(errno)))")
        }
        fchmod(fd, mode)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(aside, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(aside)
            throw Failure(description: "could not save the subscription list \(path): \(reason)")
        }
    }

    private func record() {
        _ = CachePrivacy.writeFile(cacheDirectory + "/" + Self.locationFileName, Array((path + "\n").utf8))
    }

    private func seed() -> [String] {
        guard let data = FileManager.default.contents(atPath: cacheDirectory + "/" + Self.seedFileName) else {
            return []
        }
        return (try? SourceList.parse(Array(data))) ?? []
    }

    private func saveSeed(_ urls: [String]) {
        let text = "# The feeds the last mount command named (podfs keeps this file).\n"
            + urls.map { $0 + "\n" }.joined()
        _ = CachePrivacy.writeFile(cacheDirectory + "/" + Self.seedFileName, Array(text.utf8))
    }
}
