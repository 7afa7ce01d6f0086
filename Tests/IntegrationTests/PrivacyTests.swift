import Foundation
import Testing

/// Private feeds stay private: the cache is its owner's alone, a feed's
/// token shows in no attribute, status or log line, titles cannot drive the
/// terminal, and the daemon keeps no directory busy.
@Suite(.serialized, .needsRoot)
struct PrivacyTests {
    // MARK: - Helpers

    /// Runs `podfs ARGUMENTS` in the background mode from `directory` under
    /// umask 022; the daemon's PID goes to the fixture for cleanup. Returns
    /// once the mount lists `waitFor`.
    private static func mount(
        _ fixture: Fixture, in directory: String, _ arguments: [String], waitFor listing: Fixture.Listing = .published
    ) throws {
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let output = try Harness.run(
            "/bin/sh", ["-c", "cd '\(directory)' && umask 022 && exec '\(Harness.podfs)' mount \(quoted)"], timeout: 60)
        if let pid = Fixture.daemonPID(in: output.text) {
            fixture.adopt(daemonPID: pid)
        }
        guard output.status == 0 else {
            throw HarnessError("podfs mount failed (\(output.status)): \(output.stderr)\nlog: \(fixture.log())")
        }
        try fixture.waitUntilListed(listing)
    }

    /// Every entry below `root` (and `root`) with its mode, by `lstat`.
    private static func modes(under root: String) -> [(path: String, isDirectory: Bool, mode: Int)] {
        var found: [(String, Bool, Int)] = []
        var pending = [root]
        while let path = pending.popLast() {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let isDirectory = info.st_mode & S_IFMT == S_IFDIR
            found.append((path, isDirectory, Int(info.st_mode & 0o7777)))
            if isDirectory {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    pending.append(path + "/" + name)
                }
            }
        }
        return found
    }

    /// Per path, what the origin saw of `field` ("queries", "authorizations").
    private static func seen(_ fixture: Fixture, _ path: String, _ field: String) throws -> [String] {
        let paths = try fixture.origin.stats()["paths"] as? [String: Any]
        let entry = paths?[path] as? [String: Any]
        return (entry?[field] as? [Any])?.compactMap { $0 as? String } ?? []
    }

    // MARK: - Tests

    @Test func theCacheIsPrivateUnderAnOpenUmaskAndAnOlderLooseCacheIsTightened() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [300_000, 200_000]))
        // A cache made by an older podfs: 0755 directories, 0644 files.
        let cache = fixture.cacheDirectory
        try FileManager.default.createDirectory(atPath: cache + "/data", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: cache + "/podfs.log", contents: Data("old\n".utf8))
        _ = FileManager.default.createFile(atPath: cache + "/data/stray", contents: Data("old".utf8))
        chmod(cache, 0o755)
        chmod(cache + "/data", 0o755)
        chmod(cache + "/podfs.log", 0o644)
        chmod(cache + "/data/stray", 0o644)

        try Self.mount(
            fixture, in: fixture.directory,
            ["--cache-dir", cache, "--refresh", "1", "\(fixture.origin.base)/feed.xml", fixture.mountpoint])
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        // A refresh has rewritten the status file, and a commit the index.
        #expect(Harness.eventually(60) {
            let text = (try? Harness.run(Harness.podfs, ["status", "--cache-dir", cache]).text) ?? ""
            return text.contains("not modified") && text.contains("100%")
        })
        _ = try Harness.sh("cat '\(fixture.mountpoint)/.podfs/status' '\(fixture.mountpoint)/.podfs/status.json'")
        let whileMounted = Self.modes(under: cache)
        #expect(whileMounted.contains { $0.path.hasSuffix("/index.sqlite-wal") }, "the WAL is checked too")
        try fixture.unmount()

        var files = 0
        for entry in whileMounted + Self.modes(under: cache) {
            if entry.isDirectory {
                #expect(entry.mode == 0o700, "\(entry.path) is \(String(entry.mode, radix: 8))")
            } else {
                files += 1
                #expect(entry.mode == 0o600, "\(entry.path) is \(String(entry.mode, radix: 8))")
            }
        }
        let names = Set(Self.modes(under: cache).map { ($0.path as NSString).lastPathComponent })
        for name in ["index.sqlite", "feed-status.json", "cache-size", "lock", "podfs.log", "stray"] {
            #expect(names.contains(name), "\(name) is in the cache and was checked: \(names.sorted())")
        }
        #expect(files >= 8)
        let lines = fixture.log().split(separator: "\n").filter { $0.contains("made the cache directory private") }
        #expect(lines.count == 1, "one line says so: \(lines)")
        // The directory, the data directory and the two files.
        #expect(lines.first?.contains(cache) == true && lines.first?.contains("entries.tightened=4") == true, "\(lines)")
    }

    @Test func aFeedsSecretsAppearInNoAttributeStatusOrLogLine() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let data = Harness.bytes(count: 400_000, seed: 18)
        try fixture.origin.put("ep1.mp3", data)
        let authority = fixture.origin.base.dropFirst("http://".count)
        // A title that would turn the terminal's text around and start an
        // escape sequence (U+202E RIGHT-TO-LEFT OVERRIDE, U+009B CSI).
        let title = "Paid\u{202E}Show\u{9B}2J"
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(title)</title>
            <item><title>Episode 1</title><guid>guid-1</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="http://user:secret@\(authority)/ep1.mp3#t=secret" length="\(data.count)" type="audio/mpeg"/>
            </item></channel></rss>
            """
        try fixture.origin.put("feed.xml", Data(feed.utf8))
        let feedURL = "\(fixture.origin.base)/feed.xml?token=secret"
        try Self.mount(
            fixture, in: fixture.directory,
            ["--cache-dir", fixture.cacheDirectory, "--log-level", "trace", "--refresh", "1", feedURL,
             fixture.mountpoint],
            // The title without its invisible and control characters.
            waitFor: .paths(["PaidShow2J/2026-11-01 Episode 1.mp3"]))
        let show = try #require(
            try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint).first { $0 != "Latest.m3u" })
        let episode = fixture.mountpoint + "/" + show + "/2026-11-01 Episode 1.mp3"
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(episode)' > '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == data, "the episode's bytes are right")
        // The secrets were sent: the full URLs were used to fetch.
        #expect(try Self.seen(fixture, "/feed.xml", "queries").contains("token=secret"))
        let basic = "Basic " + Data("user:secret".utf8).base64EncodedString()
        #expect(try Self.seen(fixture, "/ep1.mp3", "authorizations").contains(basic))
        #expect(Harness.eventually(60) {
            let text = (try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text) ?? ""
            return text.contains("not modified") && text.contains("100%")
        })

        let attributes = try Harness.sh("getfattr -R -d -m - '\(fixture.mountpoint)'")
        #expect(attributes.contains("user.podfs.url=\"http://user:***@\(authority)/ep1.mp3\""), "\(attributes)")
        let statusText = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        let statusJSON = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory, "--json"])
        let controlText = try Harness.sh("cat '\(fixture.mountpoint)/.podfs/status'")
        let controlJSON = try Harness.sh("cat '\(fixture.mountpoint)/.podfs/status.json'")
        #expect(statusText.text.contains("feed.xml?token=***"), "\(statusText.text)")
        try fixture.unmount()
        let log = fixture.log()
        #expect(log.contains("feed.xml"), "the log names the feed URL it redacts")
        #expect(log.contains("trace") || log.contains("debug"), "debug lines are in the log")
        let shown: [(String, String)] = [
            ("xattrs", attributes), ("status", statusText.text + statusText.stderr), ("status --json", statusJSON.text),
            (".podfs/status", controlText), (".podfs/status.json", controlJSON), ("log", log),
        ]
        for (place, text) in shown {
            #expect(!text.contains("secret"), "\(place) shows the secret:\n\(text)")
        }
        #expect(!log.contains("token"), "log lines drop the query")

        // Text output cannot drive the terminal; JSON keeps the title.
        for (place, text) in [("status", statusText.text), (".podfs/status", controlText)] {
            #expect(!text.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{9B}" }, "\(place): \(text)")
            #expect(text.contains("PaidShow2J"), "\(place): \(text)")
        }
        for (place, json) in [("status --json", statusJSON.text), (".podfs/status.json", controlJSON)] {
            #expect(!json.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{9B}" }, "\(place): \(json)")
            let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let feeds = object?["feeds"] as? [[String: Any]]
            #expect(feeds?.first?["title"] as? String == title, "\(place) stays valid JSON with the title")
        }
    }

    @Test func theBackgroundDaemonLeavesTheDirectoryItWasStartedFrom() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [300_000]))
        // Relative paths for the cache, the feed list and the mount point.
        try Data("\(fixture.origin.base)/feed.xml\n".utf8).write(to: URL(fileURLWithPath: fixture.directory + "/feeds.txt"))
        try Self.mount(fixture, in: fixture.directory, ["--cache-dir", "cache", "feeds.txt", "mnt"])
        let pid = try #require(fixture.daemonPID)
        let cwd = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")
        #expect(cwd == "/", "the daemon's directory is \(cwd)")
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        #expect(FileManager.default.fileExists(atPath: fixture.cacheDirectory + "/index.sqlite"), "cache where it was named")
        try fixture.unmount()
        #expect(Harness.eventually { !Harness.isAlive(pid) })
    }
}
