import Foundation
import HTTPClient
import Logging
import PodFS
import Testing

@testable import podfs

/// The sync client's pure parts (the layout rule, the password file, the
/// messages), then the client against Tests/Origin/gpodder_server.py.
@Suite struct SyncClientTests {
    private static let secret = "s3cr3t-Pa55"

    // MARK: - Layout

    @Test(arguments: [
        ("https://alice@gpodder.net", "gpodder", "https://gpodder.net"),
        ("https://alice@www.gpodder.net/", "gpodder", "https://www.gpodder.net"),
        ("https://alice@sync.example.org/mygpo/api/2", "gpodder", "https://sync.example.org/mygpo"),
        ("https://alice@cloud.example.org/index.php", "nextcloud", "https://cloud.example.org"),
        ("https://alice@cloud.example.org/nc/index.php/apps/gpoddersync", "nextcloud", "https://cloud.example.org/nc"),
        ("https://alice@cloud.example.org/nc/apps/gpoddersync/", "nextcloud", "https://cloud.example.org/nc"),
    ])
    func theLayoutComesFromTheURL(url: String, layout: String, root: String) throws {
        guard case .known(let endpoint) = try SyncEndpoint.read(url, device: "laptop") else {
            Issue.record("\(url) needs no probe")
            return
        }
        #expect(endpoint.layout.rawValue == layout && endpoint.root == root && endpoint.user == "alice")
    }

    @Test func anAmbiguousURLIsProbedOnceAtStatusPHP() throws {
        let reading = try SyncEndpoint.read("https://bob%40home@cloud.example.org/", device: "laptop")
        guard case .probe(let statusURL, let gpodder, let nextcloud) = reading else {
            Issue.record("expected a probe")
            return
        }
        #expect(statusURL == "https://cloud.example.org/status.php")
        #expect(gpodder.pullURL(since: 5) == "https://cloud.example.org/api/2/subscriptions/bob%40home/laptop.json?since=5")
        #expect(nextcloud.pullURL(since: 0) == "https://cloud.example.org/index.php/apps/gpoddersync/subscriptions?since=0")
        #expect(nextcloud.pushURL == "https://cloud.example.org/index.php/apps/gpoddersync/subscription_change/create")
        let status = #"{"installed":true,"version":"28.0.0.0","versionstring":"28.0.0","productname":"Nextcloud"}"#
        #expect(SyncEndpoint.isNextcloudStatus(status: 200, body: Array(status.utf8)))
        #expect(!SyncEndpoint.isNextcloudStatus(status: 404, body: Array(status.utf8)))
        #expect(!SyncEndpoint.isNextcloudStatus(status: 200, body: Array("<html>".utf8)))
    }

    @Test(arguments: [
        "https://gpodder.net", "ftp://alice@gpodder.net", "https://alice:\(secret)@gpodder.net",
        "https://alice@gpodder.net/?token=\(secret)", "https://@gpodder.net",
    ])
    func anUnusableURLIsRefusedWithoutShowingSecrets(url: String) {
        do {
            _ = try SyncEndpoint.read(url, device: "laptop")
            Issue.record("\(url) was taken")
        } catch {
            #expect(error.code == .setup)
            #expect(!error.message.contains(Self.secret), "\(error.message)")
        }
    }

    @Test func theDeviceIsCheckedAndMadeFromTheHostName() {
        #expect(SyncEndpoint.deviceID(hostName: "My Laptop.local") == "My-Laptop.local")
        #expect(SyncEndpoint.deviceID(hostName: "…") == "podfs")
        #expect(throws: SyncError.self) { try SyncEndpoint.read("https://a@gpodder.net", device: "a/b") }
    }

    // MARK: - Password file

    @Test func aPasswordFileOthersMayReadIsRefused() throws {
        let path = try Self.passwordFile(mode: 0o644)
        defer { unlink(path) }
        do {
            _ = try SyncPassword.read(path: path)
            Issue.record("a 0644 file was read")
        } catch {
            #expect(error.message.contains("chmod 600 \(path)"))
            #expect(!error.message.contains(Self.secret))
        }
        chmod(path, 0o600)
        #expect(try SyncPassword.read(path: path) == Self.secret)
        #expect(throws: SyncError.self) { try SyncPassword.check(mode: S_IFDIR | 0o700, owner: geteuid(), path: "d") }
        #expect(throws: SyncError.self) { try SyncPassword.password(in: Array("\n".utf8), path: "p") }
        #expect(try SyncPassword.password(in: Array("pw\r\nrest".utf8), path: "p") == "pw")
    }

    @Test func credentialsNeverShowThePassword() {
        let credentials = HTTPCredentials.basic(user: "alice", password: Self.secret)
        #expect(!credentials.description.contains(Self.secret))
    }

    // MARK: - Against the test server

    /// The HTTP client hands an ended transfer's libcurl handle to the next
    /// one (reset to libcurl's defaults): a request without credentials
    /// after one with them is refused, and one with them after that is
    /// served again.
    @Test func aReusedHandleKeepsNoCredentials() throws {
        guard let server = try TestSyncServer.start() else { return }
        defer { server.stop() }
        try server.post("/_seed", #"{"user": "alice", "device": "laptop", "add": []}"#)
        let client = HTTPClient(logger: Logger(label: "test"))
        defer { client.shutdown() }
        let url = "http://127.0.0.1:\(server.port)/api/2/devices/alice.json"
        func status(_ credentials: HTTPCredentials?) throws -> Int {
            let response = try client.fetchAll(HTTPRequest(url: url, credentials: credentials), limit: 1 << 20)
            // The transfer's handle goes back once the network thread lets
            // go of it, a moment after the answer.
            usleep(50_000)
            return response.head.status
        }
        let alice = HTTPCredentials.basic(user: "alice", password: "secret")
        #expect(try status(alice) == 200)
        #expect(try status(nil) == 401)
        #expect(try status(alice) == 200)
        #expect(try status(nil) == 401)
    }

    @Test func pullsAndPushesAgainstBothLayoutsAndSaysWhatWentWrong() throws {
        guard let server = try TestSyncServer.start() else { return }
        defer { server.stop() }
        let client = HTTPClient(logger: Logger(label: "test"))
        defer { client.shutdown() }
        let goodFile = try Self.passwordFile(mode: 0o600, content: "secret\n")
        let badFile = try Self.passwordFile(mode: 0o600, content: Self.secret + "\n")
        defer {
            unlink(goodFile)
            unlink(badFile)
        }
        let base = "http://alice@127.0.0.1:\(server.port)"
        // The phone (as mygpoclient would) uploaded two feeds.
        try server.post("/_seed", #"{"user": "alice", "device": "laptop", "add": ["https://a.example/f.xml", "itpc://b.example/p"]}"#)
        let gpodder = try SyncClient(
            url: base + "/api/2", device: "laptop", passwordFile: goodFile, client: client,
            logger: Logger(label: "test"))
        let pulled = try gpodder.pull(since: 0)
        #expect(pulled.add == ["https://a.example/f.xml", "http://b.example/p"] && pulled.timestamp > 0)
        let receipt = try gpodder.push(.init(add: ["https://c.example/f.xml"], remove: ["https://a.example/f.xml"]))
        #expect(receipt.timestamp ?? 0 > pulled.timestamp)
        let later = try gpodder.pull(since: pulled.timestamp)
        #expect(later.add == ["https://c.example/f.xml"] && later.remove == ["https://a.example/f.xml"])

        // A device gpodder.net never met: its pull is 404 there, so the
        // device is made (named, as a server) and asked again.
        let fresh = try SyncClient(
            url: base + "/api/2", device: "new-box", passwordFile: goodFile, client: client, logger: Logger(label: "test"))
        let first = try fresh.pull(since: 0)
        #expect(first.add.isEmpty && first.timestamp > 0)
        let devices = try server.get("/api/2/devices/alice.json", user: "alice:secret")
        #expect(devices.contains(#""id": "new-box", "caption": "podfs (new-box)", "type": "server""#), "\(devices)")
        let madeOnce = try server.stats()
        #expect(madeOnce.contains(#""POST /api/2/devices/alice/new-box.json": 1"#), "\(madeOnce)")
        #expect(madeOnce.contains(#""GET /api/2/subscriptions/alice/new-box.json": 2"#), "\(madeOnce)")
        _ = try fresh.pull(since: first.timestamp)
        #expect(try server.stats().contains(#""POST /api/2/devices/alice/new-box.json": 1"#), "made once only")

        // Nextcloud, found by probing status.php once.
        try server.post("/_control", #"{"nextcloud_status": true}"#)
        let nextcloud = try SyncClient(url: base, device: "laptop", passwordFile: goodFile, client: client, logger: Logger(label: "test"))
        _ = try nextcloud.push(.init(add: ["https://n.example/f.xml"], remove: []))
        #expect(try nextcloud.pull(since: 0).add == ["https://n.example/f.xml"])
        #expect(try server.stats().contains(#""/status.php": 1"#))

        // A wrong password: the message names the user and the option,
        // never the password.
        let wrong = try SyncClient(url: base + "/api/2", device: "laptop", passwordFile: badFile, client: client, logger: Logger(label: "test"))
        #expect(throws: SyncError.self) { try wrong.pull(since: 0) }
        do {
            _ = try wrong.pull(since: 0)
        } catch {
            #expect(error.code == .unauthorized)
            #expect(error.message.contains("alice") && error.message.contains("sync_password_file"))
            #expect(!error.message.contains(Self.secret), "\(error.message)")
        }
        // A 404 is asked of the device call too before it is believed.
        for (mode, code) in [("503", SyncError.Code.unavailable), ("garbage", .badAnswer), ("huge", .badAnswer),
                             ("bad_timestamp", .badAnswer), ("404", .notFound)] {
            try server.post("/_control", #"{"answer": {"mode": "\#(mode)", "count": \#(mode == "404" ? 2 : 1)}}"#)
            do {
                _ = try gpodder.pull(since: 0)
                Issue.record("\(mode) was taken")
            } catch {
                #expect(error.code == code, "\(mode): \(error.message)")
            }
        }
        // Nobody there.
        let gone = try SyncClient(url: "http://alice@127.0.0.1:1/api/2", device: "laptop", passwordFile: goodFile, client: client, logger: Logger(label: "test"))
        #expect(throws: SyncError.self) { try gone.pull(since: 0) }
    }

    // MARK: - Helpers

    private static func passwordFile(mode: mode_t, content: String = secret + "\n") throws -> String {
        let path = FileManager.default.temporaryDirectory.appending(path: "podfs-sync-\(UUID().uuidString)").path
        try Data(content.utf8).write(to: URL(filePath: path))
        chmod(path, mode)
        return path
    }
}

/// Tests/Origin/gpodder_server.py on a free port, stopped by its PID.
private struct TestSyncServer {
    let process: Process
    let port: Int

    /// `nil` (the test passes vacuously) when python3 is missing.
    static func start() throws -> TestSyncServer? {
        let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
        let portFile = FileManager.default.temporaryDirectory.appending(path: "podfs-sync-port-\(UUID().uuidString)").path
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/python3")
        process.arguments = [root.appending(path: "Tests/Origin/gpodder_server.py").path, "--port-file", portFile]
        try process.run()
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                unlink(portFile)
                return TestSyncServer(process: process, port: port)
            }
            usleep(25_000)
        }
        kill(process.processIdentifier, SIGTERM)
        throw CocoaError(.fileReadNoSuchFile)
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    func post(_ path: String, _ json: String) throws {
        _ = try send(path, body: Array(json.utf8))
    }

    func stats() throws -> String {
        try send("/_stats", body: nil)
    }

    /// An API call as `user` ("NAME:PASSWORD").
    func get(_ path: String, user: String) throws -> String {
        let parts = user.split(separator: ":", maxSplits: 1).map(String.init)
        return try send(path, body: nil, credentials: .basic(user: parts[0], password: parts[1]))
    }

    private func send(_ path: String, body: [UInt8]?, credentials: HTTPCredentials? = nil) throws -> String {
        let client = HTTPClient(logger: Logger(label: "control"))
        defer { client.shutdown() }
        var request = HTTPRequest(url: "http://127.0.0.1:\(port)\(path)", body: body)
        request.credentials = credentials
        return String(decoding: try client.fetchAll(request, limit: 1 << 20).body, as: UTF8.self)
    }
}
