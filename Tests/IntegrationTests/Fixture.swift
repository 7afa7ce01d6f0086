import Foundation

/// One test's world: an origin serving episodes and a feed, a cache
/// directory and a mount point, all under one temporary folder, torn down
/// (unmounted, daemons killed by PID, origin stopped) in `cleanup()`.
final class Fixture {
    struct EpisodeFile {
        var title: String
        var file: String
        var data: Data
        /// The enclosure length written in the feed (`nil`: the true size).
        var feedLength: Int?
        var date: String
    }

    let directory: String
    let origin: TestOrigin
    let mountpoint: String
    let cacheDirectory: String
    private(set) var daemonPIDs: [pid_t] = []
    private(set) var episodes: [EpisodeFile] = []
    /// What `publish` put in the feed as the mount lists it, relative to
    /// the mount point: the show's folder, then its episode files.
    private(set) var publishedPaths: [String] = []
    static let showTitle = "Test Show"

    /// `originPort` 0 lets the origin take a free port.
    init(originPort: Int = 0) throws {
        directory = NSTemporaryDirectory() + "podfs-it-\(UUID().uuidString.prefix(8))"
        mountpoint = directory + "/mnt"
        cacheDirectory = directory + "/cache"
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        origin = try TestOrigin(root: directory + "/origin", port: originPort)
    }

    /// Serves `episodes` and a feed listing them.
    func publish(_ episodes: [EpisodeFile], cover: Data? = nil) throws {
        self.episodes = episodes
        if let cover { try origin.put("cover.jpg", cover) }
        let image = cover == nil ? "" : #"<itunes:image href="{{BASE}}/cover.jpg"/>"#
        var items = ""
        for episode in episodes {
            try origin.put(episode.file, episode.data)
            items += """
                <item><title>\(episode.title)</title><guid>guid-\(episode.file)</guid>
                <pubDate>\(episode.date)</pubDate>
                <enclosure url="{{BASE}}/\(episode.file)" length="\(episode.feedLength ?? episode.data.count)" type="audio/mpeg"/>
                </item>

                """
        }
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
            <channel><title>\(Fixture.showTitle)</title><link>http://example.org/</link>\(image)
            \(items)</channel></rss>
            """
        try origin.put("feed.xml", Data(feed.utf8))
        publishedPaths = [Fixture.showTitle] + episodes.map { "\(Fixture.showTitle)/\(Self.listedName(of: $0))" }
    }

    /// A simple set of episodes: sizes in bytes, dated 2026-11-01, -02, ...
    static func episodes(sizes: [Int]) -> [EpisodeFile] {
        sizes.enumerated().map { index, size in
            EpisodeFile(
                title: "Episode \(index + 1)", file: "ep\(index + 1).mp3",
                data: Harness.bytes(count: size, seed: UInt64(index + 1)), feedLength: nil,
                date: String(format: "Sun, %02d Nov 2026 10:00:00 GMT", index + 1))
        }
    }

    /// The path of an episode inside the mount.
    func path(_ index: Int) -> String {
        "\(mountpoint)/\(Fixture.showTitle)/\(Self.listedName(of: episodes[index]))"
    }

    /// Where the local copy of an episode's bytes lives (the origin's file).
    func originPath(_ index: Int) -> String {
        origin.root + "/" + episodes[index].file
    }

    /// `podfs mount` in the background; returns once the mount lists
    /// `waitFor` (by default what `publish` published), and throws when it
    /// does not within `listingDeadline`. `launcher` runs podfs through
    /// another program (e.g. `prlimit`).
    func mount(extra: [String] = [], launcher: [String] = [], waitFor listing: Listing = .published) throws {
        let arguments = ["mount", "--cache-dir", cacheDirectory] + extra + ["\(origin.base)/feed.xml", mountpoint]
        let output = try launcher.isEmpty
            ? Harness.run(Harness.podfs, arguments, timeout: 60)
            : Harness.run(launcher[0], Array(launcher.dropFirst()) + [Harness.podfs] + arguments, timeout: 60)
        guard output.status == 0 else {
            throw HarnessError("podfs mount failed (\(output.status)): \(output.stderr)\nlog: \(log())")
        }
        if let pid = Self.daemonPID(in: output.text) { daemonPIDs.append(pid) }
        try waitUntilListed(listing)
    }

    /// The daemon's PID in what `podfs mount` printed ("... (pid N, ...").
    static func daemonPID(in text: String) -> pid_t? {
        guard let range = text.range(of: "pid ") else { return nil }
        return Int32(text[range.upperBound...].prefix { $0.isNumber })
    }

    var daemonPID: pid_t? { daemonPIDs.last }

    /// A daemon started for this fixture by someone else (a remount by a
    /// helper script): `cleanup()` kills it too.
    func adopt(daemonPID pid: pid_t) {
        daemonPIDs.append(pid)
    }

    /// Whether `path` is a mount point now (per /proc/mounts).
    static func isMounted(_ path: String) -> Bool {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first == Substring(path) }
    }

    /// A mount found busy is tried again for up to 20 s, and the log says
    /// so: under ThreadSanitizer in CI, an unmount right after the test
    /// closed its last file there has found it busy, twice for longer than
    /// 5 s (three tries: each `podfs unmount` is slow there). The likely
    /// cause, children of the harness inheriting a file another test had
    /// open in its mount, is closed (`Harness.spawn`, `HarnessTests`); the
    /// wait stays. Tests that mean a busy mount run `podfs unmount`
    /// themselves.
    func unmount() throws {
        let deadline = Date().addingTimeInterval(20)
        var output = try Harness.run(Harness.podfs, ["unmount", mountpoint], timeout: 60)
        while output.status != 0, output.stderr.contains("busy"), Date() < deadline {
            print("unmount of \(mountpoint) found it busy; trying again: \(output.stderr.prefix(200))")
            Thread.sleep(forTimeInterval: 0.2)
            output = try Harness.run(Harness.podfs, ["unmount", mountpoint], timeout: 60)
        }
        guard output.status == 0 else { throw HarnessError("podfs unmount failed: \(output.stderr)") }
    }

    /// Copies episode `index` through the mount with `cat` and returns the
    /// copy's SHA-256 (compare with `originHash`).
    func hashOfCopy(_ index: Int = 0, timeout: Double = 120) throws -> String {
        let copy = directory + "/copy"
        try Harness.sh("cat '\(path(index))' > '\(copy)'", timeout: timeout)
        return try Harness.sha256(copy)
    }

    /// The SHA-256 of episode `index` as the origin serves it.
    func originHash(_ index: Int = 0) throws -> String {
        try Harness.sha256(originPath(index))
    }

    /// Cached bytes per episode URL, from `podfs status --json`.
    func cachedBytes() throws -> [String: Int64] {
        let output = try Harness.run(Harness.podfs, ["status", "--json", "--cache-dir", cacheDirectory])
        let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        var result: [String: Int64] = [:]
        for feed in object?["feeds"] as? [[String: Any]] ?? [] {
            for episode in feed["episodes"] as? [[String: Any]] ?? [] {
                result[episode["url"] as? String ?? ""] = (episode["cachedBytes"] as? NSNumber)?.int64Value
            }
        }
        return result
    }

    func log() -> String {
        (try? String(contentsOfFile: cacheDirectory + "/podfs.log", encoding: .utf8)) ?? ""
    }

    /// Unmounts whatever is left, kills the daemons it started, stops the
    /// origin and removes the folder. Safe to call more than once.
    func cleanup() {
        _ = try? Harness.run("fusermount3", ["-u", "-z", mountpoint], timeout: 20)
        for pid in daemonPIDs where kill(pid, 0) == 0 {
            kill(pid, SIGKILL)
        }
        origin.stop()
        // PODFS_KEEP_TEST_DIRS=1 keeps the folder (logs, cache) for a post-mortem.
        if ProcessInfo.processInfo.environment["PODFS_KEEP_TEST_DIRS"] == nil {
            _ = try? Harness.run("rm", ["-rf", directory], timeout: 60)
        }
    }
}
