import Foundation
import TestSupport
import Testing

/// Guarantee 1 from a syscall trace of the daemon: every range the index
/// commits was written to the episode's scratch file and `fdatasync`ed
/// before the commit began. A SIGKILL keeps the kernel's page cache, so
/// the kill tests cannot see a missing sync or a wrong order; the trace
/// shows the order itself, with no timing involved
/// (Tests/Origin/check_commit_order.py replays the index's writes and reads
/// each commit's ranges).
@Suite(
    .serialized,
    .needsRoot,
    .needs(Requirement.programs(["strace"], for: "traces the daemon")))
struct CommitOrderTests {
    private static let mib = 1024 * 1024

    /// The flush thread's commits (every second): the origin holds the
    /// body mid-episode until a commit of part of it is seen, so at least
    /// one commit lists a partial range.
    @Test func everyRangeTheFlushThreadCommitsWasSyncedFirst() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib + 3
        try fixture.publish(Fixture.episodes(sizes: [size]))
        let summary = try traced(fixture) {
            try fixture.origin.configure(#"{"hold": {"path": "/ep1.mp3", "after_bytes": 524288, "count": 1}}"#)
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            let copy = fixture.directory + "/copy"
            let reader = try Harness.spawn(
                "dd", ["if=\(fixture.path(0))", "of=\(copy)", "bs=1M", "status=none"], stdout: devNull, stderr: devNull)
            var status: Int32 = -1
            defer { if kill(reader, 0) == 0 { kill(reader, SIGKILL); waitpid(reader, &status, 0) } }
            #expect(Harness.eventually(60) { (try? fixture.origin.held()) == 1 }, "the origin held the body")
            let partial = Harness.eventually(60) {
                let cached = (try? CacheStatus(fixture.cacheDirectory).cached[fixture.name(0)]) ?? 0
                return cached > 0 && cached < size
            }
            #expect(partial, "part of the episode was committed while the body was held")
            try fixture.origin.clearFaults()
            #expect(Harness.eventually(120) { waitpid(reader, &status, WNOHANG) == reader }, "the reader ended")
            #expect(status == 0)
            #expect(try Harness.sha256(copy) == fixture.originHash())
        }
        try expectOrderKept(summary, fixture: fixture, size: size, minimumPartialCommits: 1)
    }

    /// `commit_interval=0`: the network thread commits after every chunk.
    @Test func everyRangeCommittedAfterEachChunkWasSyncedFirst() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 4 * Self.mib + 11
        try fixture.publish(Fixture.episodes(sizes: [size]))
        let summary = try traced(fixture, extra: ["-o", "commit_interval=0"]) { () throws in
            #expect(try fixture.hashOfCopy() == fixture.originHash())
        }
        try expectOrderKept(summary, fixture: fixture, size: size, minimumPartialCommits: 3)
    }

    // MARK: - Helpers

    /// Mounts, traces the daemon with strace while `body` runs, unmounts
    /// and checks the trace; returns the checker's summary.
    private func traced(_ fixture: Fixture, extra: [String] = [], _ body: () throws -> Void) throws -> [String: Any] {
        try fixture.mount(extra: extra)
        let daemon = try #require(fixture.daemonPID)
        let trace = fixture.directory + "/trace"
        let index = fixture.cacheDirectory + "/index.sqlite"
        // WAL frames are read from the trace: print whole pages.
        var pageSize = 4096
        if let header = FileManager.default.contents(atPath: index + "-wal"), header.count >= 12 {
            pageSize = header[8..<12].reduce(0) { $0 << 8 | Int($1) }
        }
        let straceLog = try TempFile()
        let tracer = try Harness.spawn(
            "strace",
            ["-f", "-qq", "-xx", "-s", String(pageSize + 64), "-o", trace,
             "-e", "trace=openat,open,creat,close,dup,dup2,dup3,pwrite64,write,writev,pwritev,pwritev2,"
                + "fdatasync,fsync,ftruncate,fallocate",
             "-p", String(daemon)],
            stdout: straceLog.handle.fileDescriptor, stderr: straceLog.handle.fileDescriptor)
        var tracerStatus: Int32 = -1
        defer { if kill(tracer, 0) == 0 { kill(tracer, SIGKILL); waitpid(tracer, &tracerStatus, 0) } }
        // Every thread of the daemon is traced before anything happens.
        let attached = Harness.eventually(30) { Self.allThreadsTraced(daemon, by: tracer) }
        try #require(attached, "strace did not attach: \(String(decoding: straceLog.contents(), as: UTF8.self))")
        var descriptors: [String: String] = [:]
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/fd")) ?? [] {
            if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon)/fd/\(fd)") {
                descriptors[fd] = path
            }
        }
        let snapshot = fixture.directory + "/snapshot"
        try FileManager.default.createDirectory(atPath: snapshot, withIntermediateDirectories: true)
        for name in ["index.sqlite", "index.sqlite-wal"]
        where FileManager.default.fileExists(atPath: fixture.cacheDirectory + "/" + name) {
            try FileManager.default.copyItem(atPath: fixture.cacheDirectory + "/" + name, toPath: snapshot + "/" + name)
        }
        try body()
        try fixture.unmount()
        #expect(
            Harness.eventually(60) { waitpid(tracer, &tracerStatus, WNOHANG) == tracer }, "strace ended with the daemon")
        let fds = String(decoding: try JSONSerialization.data(withJSONObject: descriptors), as: UTF8.self)
        let check = try Harness.run(
            "python3",
            [Harness.root + "/Tests/Origin/check_commit_order.py", trace, snapshot, fixture.cacheDirectory, fds],
            timeout: 300)
        let lines = check.text.split(separator: "\n")
        #expect(check.status == 0, "\(lines.filter { !$0.hasPrefix("{") }.joined(separator: "\n")) \(check.stderr)")
        let summary = lines.last.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return try #require(summary, "no summary from the checker: \(check.text) \(check.stderr)")
    }

    /// The checker found no violation, and the trace was not vacuous: the
    /// episode was committed in parts, synced, and whole at the end.
    private func expectOrderKept(
        _ summary: [String: Any], fixture: Fixture, size: Int, minimumPartialCommits: Int
    ) throws {
        let key = try #require(try CacheStatus(fixture.cacheDirectory)[fixture.name(0)]?.key)
        let perCommit = (summary["per_commit"] as? [[String: [[Int]]]]) ?? []
        let episodeStates = perCommit.compactMap { $0[key] }.filter { !$0.isEmpty }
        let partial = Set(episodeStates.filter { $0 != [[0, size]] }.map { "\($0)" })
        let final = (summary["final"] as? [String: [[Int]]])?[key]
        let syncs = (summary["scratch_syncs"] as? NSNumber)?.intValue ?? 0
        #expect((summary["violations"] as? [String])?.isEmpty == true)
        #expect(final == [[0, size]], "the last commit lists the whole episode: \(String(describing: final))")
        #expect(partial.count >= minimumPartialCommits, "commits of part of the episode: \(partial.sorted())")
        #expect(syncs >= 1, "the scratch file was synced")
        print(
            "commit order: \(summary["commits"] ?? 0) index commits, \(episodeStates.count) listing the episode "
                + "(\(partial.count) distinct partial), \(summary["scratch_writes"] ?? 0) scratch writes, "
                + "\(syncs) syncs")
    }

    /// Whether every thread of `pid` has `tracer` as its tracer.
    private static func allThreadsTraced(_ pid: pid_t, by tracer: pid_t) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty
        else { return false }
        return tasks.allSatisfy { task in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").contains { $0 == "TracerPid:\t\(tracer)" }
        }
    }
}
