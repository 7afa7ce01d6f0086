import Foundation

/// What the safety tests need beyond `Fixture`: mounts of several feeds
/// (with an environment), the daemon's memory, feeds built from literal
/// URLs, and extra addresses on `lo` inside the test's own network
/// namespace.
final class SafetyMount {
    // MARK: - Properties

    let fixture: Fixture
    private(set) var daemonPIDs: [pid_t] = []

    // MARK: - Init

    init(_ fixture: Fixture) {
        self.fixture = fixture
    }

    // MARK: - Methods

    /// `podfs mount` of `feeds` on the fixture's mount point, in the
    /// background; returns the command's output (it may fail: tests look).
    /// A mount that worked returns once it lists `waitFor` (`Fixture.mount`).
    @discardableResult
    func mount(
        _ feeds: [String], extra: [String] = [], environment: [String: String] = [:],
        waitFor listing: Fixture.Listing = .published
    ) throws -> Harness.Output {
        let arguments = ["mount", "--cache-dir", fixture.cacheDirectory] + extra + feeds + [fixture.mountpoint]
        let output: Harness.Output
        if environment.isEmpty {
            output = try Harness.run(Harness.podfs, arguments, timeout: 60)
        } else {
            let assignments = environment.map { "\($0.key)=\($0.value)" }.sorted()
            output = try Harness.run("env", assignments + [Harness.podfs] + arguments, timeout: 60)
        }
        if let pid = Fixture.daemonPID(in: output.text) {
            daemonPIDs.append(pid)
        }
        if output.status == 0 {
            try fixture.waitUntilListed(listing)
        }
        return output
    }

    /// Mounts and throws unless the mount worked; returns once it lists
    /// `waitFor`.
    func mountOrThrow(
        _ feeds: [String], extra: [String] = [], environment: [String: String] = [:],
        waitFor listing: Fixture.Listing = .published
    ) throws {
        let output = try mount(feeds, extra: extra, environment: environment, waitFor: listing)
        guard output.status == 0 else {
            throw HarnessError("podfs mount failed (\(output.status)): \(output.stderr)\nlog: \(fixture.log())")
        }
    }

    var daemonPID: pid_t? { daemonPIDs.last }

    /// Unmounts and waits for the daemon (it saves its index).
    func unmount() throws {
        try fixture.unmount()
    }

    /// Unmounts whatever is left and kills the daemons this object started.
    func cleanup() {
        _ = try? Harness.run("fusermount3", ["-u", "-z", fixture.mountpoint], timeout: 20)
        for pid in daemonPIDs where kill(pid, 0) == 0 {
            kill(pid, SIGKILL)
        }
    }

    /// Peak and current resident memory of a process, in KiB (VmHWM, VmRSS).
    static func memory(of pid: pid_t) -> (peak: Int, now: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
        guard let peak = field("VmHWM"), let now = field("VmRSS") else { return nil }
        return (peak, now)
    }

    /// An RSS 2.0 feed whose items have these titles and enclosure URLs,
    /// written as given (XML-escaped only for `&`, `<` and `"`).
    static func feed(title: String, items: [(title: String, url: String)]) -> Data {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: "\"", with: "&quot;")
        }
        let body = items.map { item in
            "<item><title>\(escaped(item.title))</title><guid>\(escaped(item.title))</guid>"
                + "<enclosure url=\"\(escaped(item.url))\" type=\"audio/mpeg\" length=\"0\"/></item>"
        }.joined(separator: "\n")
        return Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(escaped(title))</title>
            \(body)
            </channel></rss>
            """.utf8)
    }

    /// Names in a directory of the mount, sorted (empty when it is missing).
    static func listing(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

/// The network namespace the tests run in (scripts/test: `unshare -n`).
enum NetworkNamespace {
    /// Extra addresses the zone tests put on `lo`: one plays a private
    /// origin, the other (with `PODFS_TEST_TREAT_AS_PUBLIC`) a public one.
    static let privateAddress = "10.23.0.1"
    static let publicStandIn = "10.23.0.2"

    /// Whether this process has a network namespace of its own with
    /// nothing but `lo` in it: only then may a test add addresses.
    /// scripts/test names the namespace it started in
    /// (`PODFS_OUTER_NETNS`); where PID 1's is readable, that one counts too.
    static let isPrivate: Bool = {
        let files = FileManager.default
        guard let mine = try? files.destinationOfSymbolicLink(atPath: "/proc/self/ns/net") else { return false }
        let outer = [
            ProcessInfo.processInfo.environment["PODFS_OUTER_NETNS"],
            try? files.destinationOfSymbolicLink(atPath: "/proc/1/ns/net"),
        ].compactMap { $0 }.filter { !$0.isEmpty }
        guard !outer.isEmpty, !outer.contains(mine),
            let devices = try? String(contentsOfFile: "/proc/self/net/dev", encoding: .utf8)
        else { return false }
        let names = devices.split(separator: "\n").dropFirst(2).compactMap { line in
            line.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return names == ["lo"]
    }()

    /// Adds the two test addresses to `lo` once per test process; they go
    /// away with the namespace. Never runs outside a private namespace.
    static let addressesReady: Result<Void, HarnessError> = {
        guard isPrivate else { return .failure(HarnessError("not in a private network namespace")) }
        for address in [privateAddress, publicStandIn] {
            let present = (try? Harness.sh("ip -o addr show dev lo")) ?? ""
            if present.contains(" \(address)/") { continue }
            do {
                try Harness.sh("ip addr add \(address)/32 dev lo")
            } catch {
                return .failure(HarnessError("cannot add \(address) to lo: \(error)"))
            }
        }
        return .success(())
    }()
}
