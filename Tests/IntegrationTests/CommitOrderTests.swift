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

    /// An eviction (the cache's cap) drops the episode's ranges with a
    /// durable commit before its file is unlinked.
    @Test func anEvictedEpisodesRangesAreDroppedBeforeItsFileGoes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size, size]))
        let summary = try traced(fixture, extra: ["--cache-size", "14M"]) {
            for index in 0..<3 {
                try Harness.sh("cat '\(fixture.path(index))' > /dev/null")
                // Committed, and the next episode read in a later second
                // (last reads are kept in seconds): the third read puts the
                // cache over its cap and the least recently read goes.
                let settled = Harness.eventually(60) {
                    guard let entry = try? CacheStatus(fixture.cacheDirectory)[fixture.name(index)],
                        let readAt = entry.lastRead
                    else { return false }
                    return entry.cachedBytes == size && Int(Date().timeIntervalSince1970) > readAt
                }
                #expect(settled, "episode \(index + 1) was committed")
            }
            let evicted = Harness.eventually(60) {
                (try? CacheStatus(fixture.cacheDirectory).cached[fixture.name(0)]) == 0
            }
            #expect(evicted, "an eviction happened")
        }
        let key = try #require(try CacheStatus(fixture.cacheDirectory)[fixture.name(0)]?.key)
        let removals = Self.removals(summary, key: key)
        #expect((summary["violations"] as? [String])?.isEmpty == true)
        #expect(removals.contains("unlink"), "the evicted episode's file was unlinked under the trace: \(removals)")
        #expect(Self.count(summary, "wal_syncs") >= 1, "the index's commits were synced")
        print("commit order, eviction: \(summary["commits"] ?? 0) index commits, removals of the evicted \(removals)")
    }

    /// A version change drops the old version's ranges with a durable
    /// commit before its bytes go: in place (a punched hole) when no file is
    /// open on it, and by a new file at the name (the old one unlinked and
    /// kept for the file open on it) when one is; the new file's name is
    /// flushed before its first commit.
    @Test func aReplacedVersionsRangesAreDroppedBeforeItsBytesGo() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3 * Self.mib + 5
        try fixture.publish(Fixture.episodes(sizes: [size]))
        let versions = [Harness.bytes(count: size, seed: 41), Harness.bytes(count: size, seed: 42)]
        let summary = try traced(fixture, extra: ["--revalidate-after", "0"]) {
            #expect(try fixture.hashOfCopy() == fixture.originHash())
            try waitUntilWhole(fixture, size: size)
            // A file held open on the first version while the origin changes.
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            let holder = try Harness.spawn(
                "sh", ["-c", "exec 3<'\(fixture.path(0))'; exec sleep 600"], stdout: devNull, stderr: devNull)
            defer { Harness.terminate(holder) }
            let holding = Harness.eventually(30) {
                let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(holder)/fd")) ?? []
                return fds.contains {
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(holder)/fd/\($0)"))
                        == fixture.path(0)
                }
            }
            #expect(holding, "a file is held open on the first version")
            for (number, bytes) in versions.enumerated() {
                try fixture.origin.replace("ep1.mp3", bytes)
                // An open is answered from the cache while its check of the
                // origin goes on: a later open reads the new version.
                let copy = fixture.directory + "/copy"
                let changed = Harness.eventually(60) {
                    _ = try? Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
                    return (try? Data(contentsOf: URL(fileURLWithPath: copy))) == bytes
                }
                #expect(changed, "version \(number + 2) is read")
                try waitUntilWhole(fixture, size: size)
                // The second change meets no open file.
                Harness.terminate(holder)
            }
        }
        #expect(fixture.log().contains("the episode changed at the origin"), "the origin's changes were seen")
        let key = try #require(try CacheStatus(fixture.cacheDirectory)[fixture.name(0)]?.key)
        let removals = Self.removals(summary, key: key)
        #expect((summary["violations"] as? [String])?.isEmpty == true)
        #expect(removals.contains("unlink"), "the version open in a file was set aside (unlinked): \(removals)")
        #expect(
            removals.contains("punched hole") || removals.contains("ftruncate"),
            "the version nobody had open was freed in place: \(removals)")
        #expect(Self.count(summary, "created") >= 2, "the episode's first file and the new version's were created")
        #expect(Self.count(summary, "folder_syncs") >= 2, "the data folder was flushed for each")
        let final = (summary["final"] as? [String: [[Int]]])?[key]
        #expect(final == [[0, size]], "the last commit lists the whole new version: \(String(describing: final))")
        print(
            "commit order, version changes: \(summary["commits"] ?? 0) index commits, removals \(removals), "
                + "\(Self.count(summary, "created")) files created, \(Self.count(summary, "folder_syncs")) folder syncs")
    }

    // MARK: - Helpers

    /// Waits until the index lists all `size` bytes of episode 0.
    private func waitUntilWhole(_ fixture: Fixture, size: Int) throws {
        let whole = Harness.eventually(60) {
            (try? CacheStatus(fixture.cacheDirectory).cached[fixture.name(0)]) == size
        }
        #expect(whole, "the episode was committed whole")
    }

    /// The kinds of removal of `key`'s bytes the checker saw, in order.
    private static func removals(_ summary: [String: Any], key: String) -> [String] {
        ((summary["removals"] as? [[String: Any]]) ?? []).filter { ($0["key"] as? String) == key }
            .compactMap { $0["kind"] as? String }
    }

    /// A number of the checker's summary.
    private static func count(_ summary: [String: Any], _ name: String) -> Int {
        (summary[name] as? NSNumber)?.intValue ?? 0
    }

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
                + "fdatasync,fsync,ftruncate,fallocate,unlink,unlinkat,rename,renameat,renameat2,link,linkat",
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
        // The scratch files there are now: any other the trace opens with
        // O_CREAT is created by it.
        let dataFiles = (try? FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data")) ?? []
        try Data(dataFiles.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: snapshot + "/data-files"))
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
        #expect(Self.count(summary, "created") >= 1, "the episode's file was created under the trace")
        #expect(Self.count(summary, "folder_syncs") >= 1, "the data folder was flushed")
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
