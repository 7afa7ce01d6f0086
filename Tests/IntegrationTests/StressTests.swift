import Foundation
import Testing

/// Many readers at once (Tests/Stress/stress.py): random and sequential
/// reads over several episodes, some with O_DIRECT, while the origin keeps
/// dropping connections; every byte is compared with the origin's file.
/// scripts/stress runs the long version (32 readers, 60 s and more).
@Suite(.serialized, .needsRoot)
struct StressTests {
    private static let mib = 1024 * 1024

    /// The summary line of a stress run, as numbers by name.
    struct Summary {
        var values: [String: Double] = [:]
        subscript(_ key: String) -> Double { values[key] ?? -1 }

        init(_ output: String) throws {
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("stress: ") }) else {
                throw HarnessError("no summary line in the stress output:\n\(output)")
            }
            for token in line.dropFirst("stress: ".count).split(separator: " ") {
                let parts = token.split(separator: "=", maxSplits: 1)
                if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
            }
        }
    }

    /// The lines of a daemon's log that say why reads failed: warnings,
    /// errors, failed reads and fetches, evictions (at most the last 300).
    static func failures(in log: String) -> String {
        let wanted = [" warning ", " error ", " critical ", "fail", "evict", "gave up", "EIO"]
        let lines = log.split(separator: "\n").filter { line in wanted.contains { line.contains($0) } }
        return lines.suffix(300).joined(separator: "\n")
    }

    @Test func concurrentReadersGetExactBytesThroughDroppedConnections() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [9 * Self.mib + 1, 12 * Self.mib + 4097, 7 * Self.mib + 333, 16 * Self.mib]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        // A cache smaller than the episodes: closed episodes are evicted and
        // fetched again, so drops keep meeting fetches the whole run. The
        // debug log (about 8,000 lines) says why a read failed.
        try fixture.mount(extra: ["--cache-size", "24M", "--log-level", "debug"])
        let seed = UInt32(ProcessInfo.processInfo.environment["PODFS_STRESS_SEED"] ?? "") ?? UInt32.random(in: 1...1_000_000)
        var arguments = [
            Harness.root + "/Tests/Stress/stress.py", "--duration", "10", "--seed", String(seed),
            "--readers", "10", "--origin", fixture.origin.base,
        ]
        for index in sizes.indices {
            arguments += ["--file", fixture.path(index), fixture.originPath(index), "/" + fixture.episodes[index].file]
        }
        let output = try Harness.run("python3", arguments, timeout: 180)
        let summary = try Summary(output.text)
        print("StressTests seed \(seed): \(output.text)")
        #expect(summary["mismatches"] == 0, "seed \(seed): \(output.text)")
        #expect(summary["errors"] == 0, "seed \(seed): \(output.text)\nlog: \(Self.failures(in: fixture.log()))")
        #expect(summary["reads"] > 0 && summary["bytes"] > 0, "\(output.text)")
        #expect(summary["direct_reads"] > 0, "\(output.text)")
        #expect(summary["drops_fired"] > 0, "the origin dropped no connection: \(output.text)")
        #expect(output.status == 0, "\(output.stderr)")
        try fixture.unmount()
    }

    /// The daemon is SIGKILLed at random moments while readers go on, and
    /// mounted again each time: reads fail while it is down (counted as
    /// interrupted), but no read ever returns a wrong byte, and the index
    /// it leaves claims only bytes that are on disk.
    @Test func readersNeverSeeAWrongByteWhileTheDaemonIsKilledAndRemounted() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [9 * Self.mib + 1, 12 * Self.mib + 4097, 7 * Self.mib + 333]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        try fixture.mount()
        let pidFile = fixture.directory + "/daemon.pid"
        try "\(try #require(fixture.daemonPID))\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        let remount = [Harness.podfs, "mount", "--cache-dir", fixture.cacheDirectory, "\(fixture.origin.base)/feed.xml",
                       fixture.mountpoint]
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let seed = UInt32(ProcessInfo.processInfo.environment["PODFS_STRESS_SEED"] ?? "") ?? UInt32.random(in: 1...1_000_000)
        var arguments = [
            Harness.root + "/Tests/Stress/stress.py", "--duration", "12", "--seed", String(seed),
            "--readers", "8", "--origin", fixture.origin.base, "--kill-every", "2", "--pid-file", pidFile,
            "--remount", remount,
        ]
        for index in sizes.indices {
            arguments += ["--file", fixture.path(index), fixture.originPath(index), "/" + fixture.episodes[index].file]
        }
        let output = try Harness.run("python3", arguments, timeout: 240)
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            fixture.adopt(daemonPID: pid)
        }
        let summary = try Summary(output.text)
        print("StressTests kills, seed \(seed): \(output.text)")
        #expect(summary["mismatches"] == 0, "seed \(seed): \(output.text)")
        #expect(summary["errors"] == 0, "seed \(seed): \(output.text)\nlog: \(Self.failures(in: fixture.log()))")
        #expect(summary["kills"] >= 1, "\(output.text)")
        #expect(summary["reads"] > 0, "\(output.text)")
        #expect(output.status == 0, "\(output.stderr)")
        try fixture.unmount()
        let verify = try Harness.run(Harness.podfs, ["cache", "verify", "--cache-dir", fixture.cacheDirectory], timeout: 60)
        let problems = verify.text.split(separator: "\n").filter {
            $0.hasPrefix("problem:") && !$0.contains("no episode in the index owns")
        }
        #expect(problems.isEmpty, "\(verify.text)")
        #expect(verify.status != 2, "\(verify.text)\(verify.stderr)")
    }

    /// A file manager lists the folder (READDIRPLUS), a player opens an
    /// episode, and after the kernel's entry expired (30 s) another program
    /// opens it too: the lookup that revalidates it must name the same inode
    /// (same generation), or the kernel takes the inode for a reused one and
    /// fails every read and the close on the player's file with EIO (found
    /// by scripts/stress).
    @Test func anEpisodeOpenedAfterAListingStaysReadablePastTheEntryTimeout() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib + 7]))
        try fixture.mount()
        let folder = (fixture.path(0) as NSString).deletingLastPathComponent
        try Harness.sh("ls -l '\(folder)' > /dev/null")
        let script = """
            import os, sys, time
            path, origin = sys.argv[1], sys.argv[2]
            want = open(origin, "rb").read()
            fd = os.open(path, os.O_RDONLY)
            assert os.pread(fd, 65536, 0) == want[:65536], "first read"
            time.sleep(33)
            # Another program opens the episode: the kernel looks it up again.
            other = os.open(path, os.O_RDONLY)
            assert os.pread(other, 100, 5) == want[5:105], "read on a new open"
            os.close(other)
            for offset in (1 << 20, 65536, len(want) - 100):
                assert os.pread(fd, 65536, offset) == want[offset:offset + 65536], "read at %d" % offset
            os.close(fd)
            print("ok")
            """
        let output = try Harness.run("python3", ["-c", script, fixture.path(0), fixture.originPath(0)], timeout: 120)
        #expect(output.status == 0 && output.text.contains("ok"), "\(output.stderr)")
        try fixture.unmount()
    }
}
