import Foundation
import Testing

/// Issue 39, item 5: a version change whose durable steps fail stops the
/// episode and never mixes it (docs/DESIGN.md, "A durable step that
/// fails"). The fault is real: another process holds the index in an
/// exclusive SQLite transaction, so podfs's write waits out its busy
/// timeout (5 s) and fails, as it would behind a backup tool or a
/// `sqlite3` shell left open.
@Suite(.serialized, .needsRoot)
struct IndexFailureTests {
    private static let size = 3 * 1024 * 1024

    /// A mounted episode partly read and committed, then changed at the
    /// origin while another process holds the index: a read of it gets
    /// EIO. Returns the fixture, the old bytes' file and the lock holder.
    private func changeBehindALockedIndex() throws -> (Fixture, String, pid_t) {
        let fixture = try Fixture()
        var holder: pid_t?
        do {
            let (old, locker) = try lockAndChange(fixture, holder: &holder)
            return (fixture, old, locker)
        } catch {
            // Nothing is left behind when a step fails: the lock's holder
            // stops, the mount goes.
            if let holder { release(holder) }
            fixture.cleanup()
            throw error
        }
    }

    private func lockAndChange(_ fixture: Fixture, holder: inout pid_t?) throws -> (String, pid_t) {
        try fixture.mountWithItsFirstMebibyteCommitted(size: Self.size)
        let old = fixture.directory + "/old.mp3"
        try fixture.episodes[0].data.write(to: URL(fileURLWithPath: old))
        try fixture.origin.replace("ep1.mp3", Harness.bytes(count: Self.size, seed: 39))
        let said = fixture.directory + "/locked"
        let script =
            "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
            + "c.execute('BEGIN EXCLUSIVE'); open(sys.argv[2], 'w').write('locked'); time.sleep(120)"
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let locker = try Harness.spawn(
            "/usr/bin/python3", ["-c", script, fixture.cacheDirectory + "/index.sqlite", said],
            stdout: devNull, stderr: devNull)
        holder = locker
        #expect(Harness.eventually(10) { FileManager.default.fileExists(atPath: said) }, "the index is locked")
        // Past the revalidation time: the next open asks the origin, whose
        // head shows the new version.
        Thread.sleep(forTimeInterval: 1.5)
        let read = try Harness.run(
            "dd", ["if=\(fixture.path(0))", "of=/dev/null", "bs=64k", "count=1", "iflag=direct"], timeout: 60)
        print("a read while the index is locked: dd exit \(read.status): \(read.stderr.suffix(120))")
        #expect(read.status != 0, "the new version is not served before the index forgot the old one")
        #expect(fixture.log().contains("could not forget its old bytes yet"), "the log says why")
        return (old, locker)
    }

    /// Stops the lock's holder (again: a second call finds it reaped).
    private func release(_ holder: pid_t) {
        guard kill(holder, 0) == 0 else { return }
        kill(holder, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(holder, &status, 0)
    }

    /// Killed while the index is still locked: the cache afterwards holds
    /// one version, the old one, every byte the index lists being the old
    /// version's. Remounted, the episode reads as the new version whole.
    @Test func aKillWhileTheIndexCannotTakeAChangeLeavesOneVersion() throws {
        let (fixture, old, holder) = try changeBehindALockedIndex()
        defer {
            release(holder)
            fixture.cleanup()
        }
        let pid = try #require(fixture.daemonPID)
        kill(pid, SIGKILL)
        release(holder)
        try Harness.sh("fusermount3 -u -z '\(fixture.mountpoint)' || true")
        let check = try Harness.run(
            "python3", [Harness.root + "/Tests/Origin/check_index.py", fixture.cacheDirectory, old])
        print("after the kill: \(check.text)")
        #expect(check.status == 0, "every byte the index lists is the old version's: \(check.text) \(check.stderr)")
        try fixture.mount()
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'", timeout: 120)
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)), "the new version, whole")
        try fixture.unmount()
    }

    /// Once the index is free again, the next flush pass does the steps
    /// and the episode reads again: the new version, whole.
    @Test func theEpisodeReadsAgainOnceTheIndexTakesTheChange() throws {
        let (fixture, _, holder) = try changeBehindALockedIndex()
        defer {
            release(holder)
            fixture.cleanup()
        }
        release(holder)
        #expect(Harness.eventually(30) { fixture.log().contains("it reads again") }, "the steps were done")
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'", timeout: 120)
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)), "the new version, whole")
        try fixture.unmount()
        let check = try Harness.run(
            "python3", [Harness.root + "/Tests/Origin/check_index.py", fixture.cacheDirectory, fixture.originPath(0)])
        #expect(check.status == 0, "\(check.text) \(check.stderr)")
    }
}
