import Foundation

/// The test origin (Tests/Origin/origin.py) on 127.0.0.1 (or another
/// address put on `lo` inside the test's network namespace): serves a folder
/// with Range, ETag and Last-Modified, counts bytes, injects faults.
final class TestOrigin {
    let root: String
    /// The address it listens on.
    let host: String
    private(set) var port: Int = 0
    private var pid: pid_t?

    var base: String { "http://\(host):\(port)" }

    /// `port` 0 takes a free one; a fixed one is for a cache made for it
    /// (inside the test's own network namespace nothing else holds it).
    init(root: String, host: String = "127.0.0.1", port: Int = 0) throws {
        self.root = root
        self.host = host
        self.port = port
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try start()
    }

    deinit { stop() }

    /// Starts (or restarts, on the same port when it had one) the origin.
    func start() throws {
        let portFile = root + "/../origin.port"
        try? FileManager.default.removeItem(atPath: portFile)
        let log = FileHandle(forWritingAtPath: root + "/../origin.log")
            ?? { _ = FileManager.default.createFile(atPath: root + "/../origin.log", contents: nil)
                 return FileHandle(forWritingAtPath: root + "/../origin.log") }()
        guard let log else { throw HarnessError("cannot create the origin's log") }
        defer { try? log.close() }
        log.seekToEndOfFile()
        pid = try Harness.spawn(
            "python3",
            [Harness.root + "/Tests/Origin/origin.py", "--root", root, "--bind", host, "--port", String(port),
             "--port-file", portFile],
            stdout: log.fileDescriptor, stderr: log.fileDescriptor)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                port = value
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw HarnessError("the test origin did not start")
    }

    /// Stops the origin process (by its PID).
    func stop() {
        guard let pid else { return }
        Harness.terminate(pid)
        self.pid = nil
    }

    /// Writes a file into the origin's folder.
    func put(_ name: String, _ data: Data) throws {
        let path = root + "/" + name
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Replaces a file through the origin (new bytes, new ETag).
    func replace(_ name: String, _ data: Data) throws {
        let file = try TempFile()
        try data.write(to: URL(fileURLWithPath: file.path))
        try control("put?path=/\(name)", body: file.path)
    }

    /// Body bytes sent for one path since the last reset.
    func bytesSent(_ name: String) throws -> Int64 {
        let stats = try stats()
        let paths = stats["paths"] as? [String: Any]
        let entry = paths?["/" + name] as? [String: Any]
        return (entry?["bytes"] as? NSNumber)?.int64Value ?? 0
    }

    func requests(_ name: String) throws -> Int {
        let stats = try stats()
        let paths = stats["paths"] as? [String: Any]
        let entry = paths?["/" + name] as? [String: Any]
        return (entry?["requests"] as? NSNumber)?.intValue ?? 0
    }

    /// The status of every answer for one path since the last reset, in order.
    func statuses(_ name: String) throws -> [Int] {
        let stats = try stats()
        let paths = stats["paths"] as? [String: Any]
        let entry = paths?["/" + name] as? [String: Any]
        return (entry?["statuses"] as? [NSNumber])?.map(\.intValue) ?? []
    }

    /// When the origin answered each status for the path (monotonic seconds).
    func statusTimes(_ name: String) throws -> [Double] {
        let stats = try stats()
        let paths = stats["paths"] as? [String: Any]
        let entry = paths?["/" + name] as? [String: Any]
        return (entry?["status_times"] as? [NSNumber])?.map(\.doubleValue) ?? []
    }

    /// Connections dropped mid-body for one path since the last reset.
    func drops(_ name: String) throws -> Int {
        (try pathStats(name)["drops"] as? NSNumber)?.intValue ?? 0
    }

    /// Each connection dropped mid-body for one path since the last reset:
    /// the request's Range header (`nil` without one) and the body bytes
    /// sent before the drop.
    func dropped(_ name: String) throws -> [(range: String?, sent: Int)] {
        let entries = try pathStats(name)["dropped"] as? [[String: Any]] ?? []
        return entries.map { ($0["range"] as? String, ($0["sent"] as? NSNumber)?.intValue ?? -1) }
    }

    /// Each User-Agent one path was asked with since the last reset, once.
    func userAgents(_ name: String) throws -> [String] {
        (try pathStats(name)["user_agents"] as? [Any])?.compactMap { $0 as? String } ?? []
    }

    /// Each response for one path that ended since the last reset, done or
    /// cut short: its Range header and the body bytes it sent.
    func finished(_ name: String) throws -> [(range: String?, sent: Int)] {
        let entries = try pathStats(name)["finished"] as? [[String: Any]] ?? []
        return entries.map { ($0["range"] as? String, ($0["sent"] as? NSNumber)?.intValue ?? -1) }
    }

    /// The Range header of each request for one path since the last reset
    /// that had one, in order.
    func ranges(_ name: String) throws -> [String] {
        (try pathStats(name)["ranges"] as? [String]) ?? []
    }

    /// How many variants a stitched path (`stitch` fault) was given so far.
    func variants(_ name: String) throws -> Int {
        let variants = try stats()["variants"] as? [String: Any]
        return (variants?["/" + name] as? NSNumber)?.intValue ?? 0
    }

    /// Body bytes sent for a stitched path (at the path itself and at every
    /// variant's link) since the last reset.
    func variantBytesSent(_ name: String) throws -> Int64 {
        let paths = try stats()["paths"] as? [String: Any] ?? [:]
        let stitched = paths.filter { $0.key.hasPrefix("/_variants/\(name).v") || $0.key == "/" + name }
        return stitched.values.reduce(0) { sum, entry in
            sum + (((entry as? [String: Any])?["bytes"] as? NSNumber)?.int64Value ?? 0)
        }
    }

    /// The bytes of variant `n` of a stitched file whose own bytes are
    /// `data` (as origin.py makes them).
    static func variant(_ n: Int, of data: Data, adBytes: Int, sameLength: Bool = false) -> Data {
        let value = UInt8((0x40 + n) & 0xff)
        guard !sameLength else { return Data(data.map { $0 ^ value }) }
        return Data(repeating: value, count: adBytes * (1 + n % 3)) + data
    }

    /// The bytes of ad `index` of variant `n` with `"ads": "midroll"`
    /// (origin.py's `ad_stream`): splitmix64 seeded with n * 256 + index,
    /// each word little-endian, cut to `count` bytes.
    static func adStream(_ n: Int, _ index: Int, count: Int) -> Data {
        var state = UInt64(truncatingIfNeeded: n) &* 256 &+ UInt64(index)
        var data = Data(capacity: count + 8)
        var word = [UInt8](repeating: 0, count: 8)
        while data.count < count {
            state = state &+ 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z = z ^ (z >> 31)
            for i in 0..<8 { word[i] = UInt8(truncatingIfNeeded: z >> (8 * UInt64(i))) }
            data.append(contentsOf: word)
        }
        return data.prefix(count)
    }

    /// How long each ad of variant `n` is with `"ads": "midroll"`.
    static func midrollAdLength(_ n: Int, adBytes: Int, sameLength: Bool) -> Int {
        sameLength ? adBytes : adBytes * (1 + (n - 1) % 3)
    }

    /// Where the ads go in a file of `count` bytes with `"ads": "midroll"`:
    /// before its bytes 0, count * 40 / 100 and count * 70 / 100.
    static func midrollCuts(_ count: Int) -> [Int] {
        [0, count * 40 / 100, count * 70 / 100]
    }

    /// The bytes of variant `n` of a file whose own bytes are `data` with
    /// `"ads": "midroll"` (origin.py's `midroll_variant`): a pre-roll, then
    /// the file with a mid-roll at 40 % and one at 70 % of it.
    static func midrollVariant(_ n: Int, of data: Data, adBytes: Int, sameLength: Bool) -> Data {
        let length = midrollAdLength(n, adBytes: adBytes, sameLength: sameLength)
        let cuts = midrollCuts(data.count) + [data.count]
        var out = Data(capacity: data.count + 3 * length)
        for index in 0..<3 {
            out.append(adStream(n, index, count: length))
            out.append(data[(data.startIndex + cuts[index])..<(data.startIndex + cuts[index + 1])])
        }
        return out
    }

    /// How many responses a `hold` fault is holding now.
    func held() throws -> Int {
        (try stats()["held"] as? NSNumber)?.intValue ?? -1
    }

    /// What the origin serves now: the responses (not control requests)
    /// begun and not ended, and the client connections open (accepted and
    /// not closed, with a request not yet read; control connections not
    /// counted). Both 0 after the clients are gone: no byte more is sent.
    func serving() throws -> (responses: Int, connections: Int) {
        let stats = try stats()
        return ((stats["in_progress"] as? NSNumber)?.intValue ?? -1, (stats["open_connections"] as? NSNumber)?.intValue ?? -1)
    }

    /// Lets every held response go on.
    func release() throws { try control("release") }

    private func pathStats(_ name: String) throws -> [String: Any] {
        let paths = try stats()["paths"] as? [String: Any]
        return paths?["/" + name] as? [String: Any] ?? [:]
    }

    func stats() throws -> [String: Any] {
        let text = try Harness.sh("curl -sf \(base)/_origin/stats")
        return (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// How many more requests a counted body fault (`drop`, `stall`, `hold`,
    /// `length_mismatch`) applies to: its first entry's remaining count.
    func usesLeft(_ fault: String) throws -> Int {
        let text = try Harness.sh("curl -sf \(base)/_origin/config")
        let config = (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        let entries = config?[fault] as? [[String: Any]]
        return (entries?.first?["count"] as? NSNumber)?.intValue ?? -1
    }

    func reset() throws { try control("reset") }

    /// Removes every injected fault.
    func clearFaults() throws { try control("config/clear") }

    /// Merges a fault configuration (JSON) into the origin's.
    func configure(_ json: String) throws {
        let file = try TempFile()
        try Data(json.utf8).write(to: URL(fileURLWithPath: file.path))
        try control("config", body: file.path)
    }

    private func control(_ path: String, body: String? = nil) throws {
        let data = body.map { "--data-binary @\($0)" } ?? "-d ''"
        try Harness.sh("curl -sf -X POST \(data) '\(base)/_origin/\(path)' > /dev/null")
    }
}
