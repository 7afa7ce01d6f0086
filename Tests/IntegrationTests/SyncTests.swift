import Foundation
import Testing

/// What the sync tests need beyond root: the phone's library.
private let mygpoclientMissing: String? = {
    let probe = try? Harness.run("python3", ["-c", "import mygpoclient"], timeout: 30)
    return probe?.status == 0 ? nil : "syncs with mygpoclient as the phone: python3 -m pip install mygpoclient (scripts/setup does)"
}()

/// `-o sync=`: a mount's subscriptions synced with a gpodder-API server
/// (Tests/Origin/gpodder_server.py, both layouts) while the real
/// `mygpoclient` library plays the listener's phone.
@Suite(.serialized, .needsRoot, .needs(mygpoclientMissing))
struct SyncTests {
    // MARK: - Helpers

    /// The sync server on a free port, stopped by its PID.
    private final class SyncServer {
        let pid: pid_t
        let port: Int

        init(directory: String, users: [String] = []) throws {
            let portFile = directory + "/sync-port"
            let log = open(directory + "/sync-server.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(log) }
            pid = try Harness.spawn(
                "/usr/bin/env",
                ["python3", Harness.root + "/Tests/Origin/gpodder_server.py", "--port-file", portFile]
                    + users.flatMap { ["--user", $0] },
                stdout: log, stderr: log)
            var found: Int?
            _ = Harness.eventually(20) {
                found = (try? String(contentsOfFile: portFile, encoding: .utf8))
                    .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                return found != nil
            }
            guard let found else {
                Harness.terminate(pid)
                throw HarnessError("the sync server did not start; see \(directory)/sync-server.log")
            }
            port = found
        }

        var base: String { "http://127.0.0.1:\(port)" }

        func control(_ path: String, _ json: String) throws {
            _ = try Harness.run("curl", ["-sf", "-X", "POST", "--data-binary", json, base + path], timeout: 30)
        }

        /// Requests per path, from the server's own counters.
        func requests() throws -> [String: Int] {
            let output = try Harness.run("curl", ["-sf", base + "/_stats"], timeout: 30)
            let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
            return (object?["requests"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
        }

        /// The list the server holds for `device` (`nil`: Nextcloud's one list).
        func subscriptions(device: String?, user: String = "alice") throws -> [String] {
            let query = device.map { "device=\($0)" } ?? "nextcloud=1"
            let output = try Harness.run("curl", ["-sf", base + "/_state?user=\(user)&\(query)"], timeout: 30)
            let object = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
            return (object?["subscriptions"] as? [String] ?? []).sorted()
        }

        func stop() { Harness.terminate(pid) }
    }

    /// The phone: mygpoclient uploading a change for `device`.
    private static func phone(_ server: SyncServer, device: String, add: [String], remove: [String]) throws {
        let script = """
            import sys
            from mygpoclient import api
            client = api.MygPodderClient('alice', 'secret', '127.0.0.1:\(server.port)')
            client.update_subscriptions(sys.argv[1], \(add), \(remove))
            """
        let output = try Harness.run("python3", ["-c", script, device], timeout: 60)
        #expect(output.status == 0, "mygpoclient: \(output.stderr)")
    }

    private static func feed(_ title: String, file: String) -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(title)</title>
            <item><title>Only</title><guid>\(file)</guid><pubDate>Sun, 22 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/\(file)" length="1000" type="audio/mpeg"/></item>
            </channel></rss>
            """.utf8)
    }

    private static func shows(_ fixture: Fixture) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint)) ?? [])
            .filter { $0 != "Latest.m3u" }.sorted()
    }

    /// `podfs mount` with a sync server; a mount that worked returns once
    /// it lists `waitFor`.
    /// Publishes `Show X` (one episode of `size` bytes) for each name `x`.
    private static func publishShows(_ names: [String], _ fixture: Fixture, size: Int = 1000) throws {
        for name in names {
            try fixture.origin.put("\(name).mp3", Harness.bytes(count: size, seed: 3))
            try fixture.origin.put("\(name).xml", feed("Show \(name.uppercased())", file: "\(name).mp3"))
        }
    }

    /// Writes the password file (`secret`, mode 0600) and returns its path.
    private static func passwordFile(_ fixture: Fixture) throws -> String {
        let password = fixture.directory + "/sync-password"
        try "secret\n".write(toFile: password, atomically: true, encoding: .utf8)
        chmod(password, 0o600)
        return password
    }

    private static func mount(
        _ fixture: Fixture, options: String, sources: [String] = [], waitFor listing: Fixture.Listing = .published
    ) throws -> Harness.Output {
        let output = try Harness.run(
            Harness.podfs, ["mount", "--cache-dir", fixture.cacheDirectory, "-o", options] + sources + [fixture.mountpoint],
            timeout: 60)
        if let pid = Fixture.daemonPID(in: output.text) {
            fixture.adopt(daemonPID: pid)
        }
        if output.status == 0 {
            try fixture.waitUntilListed(listing)
        }
        return output
    }

    // MARK: - Tests

    @Test(arguments: ["gpodder", "nextcloud"])
    func thePhonesChangesShowUpAndTheMountsReachThePhone(layout: String) throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let server = try SyncServer(directory: fixture.directory)
        defer { server.stop() }
        try Self.publishShows(["a", "b", "c"], fixture)
        let url = { (name: String) in "\(fixture.origin.base)/\(name).xml" }
        let password = try Self.passwordFile(fixture)
        let syncURL = layout == "gpodder" ? "http://alice@127.0.0.1:\(server.port)" : "http://alice@127.0.0.1:\(server.port)/index.php"
        // The phone's device on gpodder.net is this mount's own (devices
        // in one sync group share a list); Nextcloud has one list a user.
        let device = "laptop"
        if layout == "gpodder" {
            try Self.phone(server, device: device, add: [url("a")], remove: [])
        } else {
            try server.control("/_seed", #"{"user": "alice", "nextcloud": true, "add": ["\#(url("a"))"]}"#)
        }
        let options = "sync=\(syncURL),sync_password_file=\(password),sync_device=\(device),refresh=2"
        let mounted = try Self.mount(fixture, options: options, waitFor: .paths(["Show A/2026-11-22 Only.mp3"]))
        #expect(mounted.status == 0, "\(mounted.stderr)")
        #expect(Harness.eventually(15) { Self.shows(fixture) == ["Show A"] }, "the server's list mounted: \(Self.shows(fixture))")

        // Another device adds and removes: seen within one refresh.
        if layout == "gpodder" {
            try Self.phone(server, device: device, add: [url("b")], remove: [url("a")])
        } else {
            try server.control("/_seed", #"{"user": "alice", "nextcloud": true, "add": ["\#(url("b"))"], "remove": ["\#(url("a"))"]}"#)
        }
        let started = Date()
        #expect(Harness.eventually(15) { Self.shows(fixture) == ["Show B"] }, "\(Self.shows(fixture))")
        print("sync (\(layout)): another device's change listed after \(String(format: "%.1f", Date().timeIntervalSince(started))) s")

        // This mount's own change reaches the server.
        let subscribed = try Harness.run(
            Harness.podfs, ["subscribe", "--cache-dir", fixture.cacheDirectory, url("c")], timeout: 60)
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        if layout == "gpodder" {
            #expect(Harness.eventually(15) { (try? server.subscriptions(device: device)) == [url("b"), url("c")] })
        } else {
            #expect(Harness.eventually(15) { (try? server.subscriptions(device: nil)) == [url("b"), url("c")] })
        }

        // While nothing changes: at most one request a refresh.
        try server.control("/_reset", "{}")
        Thread.sleep(forTimeInterval: 6.5)
        let quiet = try server.requests().values.reduce(0, +)
        print("sync (\(layout)): \(quiet) request(s) in 6.5 s with refresh=2 and nothing changing")
        #expect(quiet <= 4, "one pull a refresh, nothing more")

        // The password is in no log line and no status.
        let status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30)
        #expect(status.text.contains("Sync: ok"), "\(status.text)")
        #expect(!fixture.log().contains("secret") && !status.text.contains("secret"))
    }

    /// The same cache synced with another account on the same server (a
    /// URL that differs by its user only): a first sync with that account,
    /// not the last one's state. A new device on gpodder.net is made, as
    /// the real server answers 404 to a pull of a device it never met.
    @Test func anotherAccountOnTheSameServerSyncsAfresh() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let server = try SyncServer(directory: fixture.directory, users: ["alice:secret", "bob:secret"])
        defer { server.stop() }
        try Self.publishShows(["a", "b"], fixture)
        let url = { (name: String) in "\(fixture.origin.base)/\(name).xml" }
        let password = try Self.passwordFile(fixture)
        let options = { (user: String) in
            "sync=http://\(user)@127.0.0.1:\(server.port),sync_password_file=\(password),sync_device=box,refresh=2"
        }
        // Alice's first mount: the device is new to the server (no upload
        // made it), so its pull is 404 until podfs makes it.
        let first = try Self.mount(fixture, options: options("alice"), sources: [url("a")], waitFor: .paths(["Show A/2026-11-22 Only.mp3"]))
        #expect(first.status == 0, "\(first.stderr)")
        #expect(Harness.eventually(15) { (try? server.subscriptions(device: "box", user: "alice")) == [url("a")] })
        try fixture.unmount()

        // Bob's list on the same server holds another show.
        try server.control("/_seed", #"{"user": "bob", "device": "box", "add": ["\#(url("b"))"]}"#)
        let second = try Self.mount(fixture, options: options("bob"), sources: [url("a")], waitFor: .none)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(Harness.eventually(15) { Self.shows(fixture) == ["Show A", "Show B"] }, "bob's show joins: \(Self.shows(fixture))")
        #expect(
            Harness.eventually(15) { (try? server.subscriptions(device: "box", user: "bob")) == [url("a"), url("b")] },
            "the first sync with bob pushes what is local: \((try? server.subscriptions(device: "box", user: "bob")) ?? [])")
        let status = { (try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30).text) ?? "" }
        #expect(Harness.eventually(15) { status().contains("with bob at http://127.0.0.1:\(server.port)") }, "\(status())")
    }

    /// Nextcloud keeps URLs as the phone wrote them (`feed://…`): an
    /// unsubscribe here reaches it in that spelling, not only in podfs's.
    @Test func anUnsubscribeReachesTheServerInThePhonesSpelling() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let server = try SyncServer(directory: fixture.directory)
        defer { server.stop() }
        try Self.publishShows(["c"], fixture)
        let phoneSpelling = "feed://127.0.0.1:\(fixture.origin.port)/c.xml"
        try server.control("/_seed", #"{"user": "alice", "nextcloud": true, "add": ["\#(phoneSpelling)"]}"#)
        let password = try Self.passwordFile(fixture)
        let options = "sync=http://alice@127.0.0.1:\(server.port)/index.php,sync_password_file=\(password),refresh=2"
        let mounted = try Self.mount(fixture, options: options, waitFor: .paths(["Show C/2026-11-22 Only.mp3"]))
        #expect(mounted.status == 0, "\(mounted.stderr)")
        let removed = try Harness.run(
            Harness.podfs, ["unsubscribe", "--cache-dir", fixture.cacheDirectory, "Show C"], timeout: 60)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(
            Harness.eventually(15) { (try? server.subscriptions(device: nil)) == [] },
            "the server still lists \((try? server.subscriptions(device: nil)) ?? [])")
        Thread.sleep(forTimeInterval: 4.5)
        #expect(Self.shows(fixture).isEmpty, "the show stays out: \(Self.shows(fixture))")
    }

    /// On gpodder.net the phone's app keeps a device of its own: a mount
    /// under another device ID shares nothing with it, and `podfs status`
    /// says so, naming the phone's device and what to do.
    @Test func aPhonesOwnDeviceIsNamedWhenItsListIsNotShared() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let server = try SyncServer(directory: fixture.directory)
        defer { server.stop() }
        try Self.publishShows(["a"], fixture)
        try Self.phone(server, device: "antennapod-7", add: ["\(fixture.origin.base)/a.xml"], remove: [])
        let password = try Self.passwordFile(fixture)
        let options = "sync=http://alice@127.0.0.1:\(server.port),sync_password_file=\(password),sync_device=box,refresh=2"
        let mounted = try Self.mount(fixture, options: options, waitFor: .none)
        #expect(mounted.status == 0, "\(mounted.stderr)")
        // An empty list is no warning when the server's is on its way.
        #expect(
            mounted.stderr.contains("podfs: no subscriptions yet: the sync server's list is asked for now")
                && !mounted.stderr.contains("warning"), "\(mounted.stderr)")
        let status = { (try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30).text) ?? "" }
        #expect(Harness.eventually(15) { status().contains("sync_device=antennapod-7") }, "\(status())")
        #expect(status().contains("Sync: ok") && status().contains("antennapod-7, 1 subscription"), "\(status())")
        #expect(Self.shows(fixture).isEmpty, "the phone's list is not this device's")
    }

    /// gpodder.net cleans a URL up and answers the new one
    /// (`update_urls`: the host lowercased here). The list keeps the
    /// listener's URL: the show keeps its folder, its cached bytes and its
    /// pin, and is not listed twice when the server hands its URL back.
    @Test func aURLTheServerCleansUpKeepsItsShowsCacheAndPins() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let server = try SyncServer(directory: fixture.directory)
        defer { server.stop() }
        try Self.publishShows(["a"], fixture, size: 300_000)
        let password = try Self.passwordFile(fixture)
        let options = "sync=http://alice@127.0.0.1:\(server.port),sync_password_file=\(password),sync_device=box,refresh=2"
        let mine = "http://LOCALHOST:\(fixture.origin.port)/a.xml"
        let clean = "http://localhost:\(fixture.origin.port)/a.xml"
        let mounted = try Self.mount(fixture, options: options, sources: [mine], waitFor: .paths(["Show A/2026-11-22 Only.mp3"]))
        #expect(mounted.status == 0, "\(mounted.stderr)")
        let episode = "\(fixture.mountpoint)/Show A/2026-11-22 Only.mp3"
        _ = try Harness.run("cat", [episode], timeout: 60)
        let pin = try Harness.run("setfattr", ["-n", "user.podfs.pinned", "-v", "1", episode])
        #expect(pin.status == 0, "\(pin.stderr)")
        var before = stat()
        stat(episode, &before)
        #expect(Harness.eventually(15) { (try? server.subscriptions(device: "box")) == [clean] }, "the server keeps its spelling")
        // Two more rounds: the server's URL comes back in pulls.
        Thread.sleep(forTimeInterval: 5)
        #expect(Self.shows(fixture) == ["Show A"])
        var after = stat()
        #expect(stat(episode, &after) == 0 && after.st_ino == before.st_ino, "the same file")
        #expect(try Harness.run("getfattr", ["--only-values", "-n", "user.podfs.pinned", episode]).text == "1")
        let list = (try? String(contentsOfFile: fixture.cacheDirectory + "/subscriptions.txt", encoding: .utf8)) ?? ""
        #expect(list.contains(mine) && !list.contains(clean), "\(list)")
        let cached = try fixture.cachedBytes().values.reduce(0, +)
        #expect(cached == 300_000, "the cached bytes stay: \(cached)")
        // Unsubscribed here: gone from the server too, in its spelling.
        let removed = try Harness.run(Harness.podfs, ["unsubscribe", "--cache-dir", fixture.cacheDirectory, "Show A"], timeout: 60)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(Harness.eventually(15) { (try? server.subscriptions(device: "box")) == [] })
    }

    @Test func aRefusingOrDeadServerKeepsTheListAndSaysWhy() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [1000]))
        let server = try SyncServer(directory: fixture.directory)
        defer { server.stop() }
        let password = fixture.directory + "/sync-password"
        try "wrong\n".write(toFile: password, atomically: true, encoding: .utf8)

        // A password file others may read is refused, and so is the mount.
        chmod(password, 0o644)
        let options = "sync=http://alice@127.0.0.1:\(server.port),sync_password_file=\(password),refresh=2"
        let open = try Self.mount(fixture, options: options, sources: ["\(fixture.origin.base)/feed.xml"], waitFor: .none)
        #expect(open.status != 0)
        #expect(open.stderr.contains("chmod 600"), "\(open.stderr)")
        #expect(!Fixture.isMounted(fixture.mountpoint))

        // A wrong password: the mount serves its own list and says why.
        chmod(password, 0o600)
        let mounted = try Self.mount(fixture, options: options, sources: ["\(fixture.origin.base)/feed.xml"])
        #expect(mounted.status == 0, "\(mounted.stderr)")
        #expect(Self.shows(fixture) == [Fixture.showTitle])
        let status = { (try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30).text) ?? "" }
        #expect(Harness.eventually(15) { status().contains("Sync: failed") }, "\(status())")
        #expect(status().contains("401"), "\(status())")
        #expect(!status().contains("wrong") && !fixture.log().contains("wrong"), "the password is never shown")
        #expect(try server.requests().isEmpty == false, "the server was really asked")

        // A server that answers 10,000 URLs or garbage changes nothing.
        try "secret\n".write(toFile: password, atomically: false, encoding: .utf8)
        let report = fixture.cacheDirectory + "/sync-status.json"
        for mode in ["huge", "garbage"] {
            try server.control("/_control", #"{"answer": {"mode": "\#(mode)", "count": -1}}"#)
            try fixture.unmount()
            unlink(report)
            let again = try Self.mount(fixture, options: options)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(Harness.eventually(15) { status().contains("Sync: failed") }, "\(mode): \(status())")
            #expect(Self.shows(fixture) == [Fixture.showTitle], "\(mode): the list is unchanged")
        }
        // And a dead one.
        server.stop()
        try fixture.unmount()
        unlink(report)
        let offline = try Self.mount(fixture, options: options)
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(Harness.eventually(15) { status().contains("could not reach the sync server") }, "\(status())")
        #expect(Self.shows(fixture) == [Fixture.showTitle])
        // A change made meanwhile is kept, and the status says it waits.
        let removed = try Harness.run(
            Harness.podfs, ["unsubscribe", "--cache-dir", fixture.cacheDirectory, Fixture.showTitle], timeout: 60)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(Harness.eventually(15) { status().contains("1 local change waits to be sent") }, "\(status())")
    }
}
