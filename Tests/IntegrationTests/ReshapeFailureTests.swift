import Foundation
import TestSupport
import Testing

/// Issue 39, item 5, for the scratch file's step: a version change whose
/// old bytes cannot be freed in the episode's scratch file (`reshape`:
/// punched, then resized) stops the episode and never mixes it
/// (docs/DESIGN.md, "A durable step that fails"). The fault is real: the
/// scratch file is made append-only (`chattr +a`) while podfs holds it
/// open, so the kernel refuses `fallocate`'s hole punch and `ftruncate`
/// with EPERM, and still takes writes through the open descriptor: a
/// byte of the new version written after a swallowed failure would land
/// in the file. `IndexFailureTests` fails the index's step instead.
@Suite(.serialized, .needsRoot)
struct ReshapeFailureTests {
    private static let size = 3 * 1024 * 1024
    /// The new version is longer: freed, the file is resized too.
    private static let newSize = size + 12345

    /// `nil` when a file in the test folders can be made append-only, else
    /// why not (`chattr` missing, or a file system without the flag:
    /// ext4, XFS, Btrfs and tmpfs since Linux 6.0 have it). Not root is
    /// `needsRoot`'s to say.
    private static let appendOnly: String? = {
        let purpose = "makes a cache file append-only"
        if let missing = Requirement.programs(["chattr", "python3"], for: purpose) { return missing }
        guard getuid() == 0 else { return nil }
        let path = NSTemporaryDirectory() + "podfs-append-only-\(getpid())"
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            return "\(purpose): cannot create \(path)"
        }
        defer {
            _ = try? Harness.run("chattr", ["-a", path])
            unlink(path)
        }
        let flag = try? Harness.run("chattr", ["+a", path])
        if flag?.status == 0 { return nil }
        let said = (flag?.stderr ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return "\(purpose): the file system of \(NSTemporaryDirectory()) takes no append-only flag (\(said))"
    }()

    /// A mounted episode partly read and committed, then changed at the
    /// origin while its scratch file cannot be punched: a read of it gets
    /// EIO. Returns the fixture and the scratch file, whose fault
    /// `clearFault` ends (the fixture's folder cannot be removed before).
    private func changeBehindAnAppendOnlyFile() throws -> (Fixture, String) {
        let fixture = try Fixture()
        var scratch: String?
        do {
            try fixture.mountWithItsFirstMebibyteCommitted(size: Self.size)
            let key = try #require(CacheStatus(fixture.cacheDirectory)[fixture.name(0)]?.key)
            let path = fixture.cacheDirectory + "/data/" + key
            scratch = path
            try changeWithTheFault(fixture, scratch: path)
            return (fixture, path)
        } catch {
            // Nothing is left behind when a step fails: the file can be
            // removed again, the mount goes.
            if let scratch { clearFault(scratch) }
            fixture.cleanup()
            throw error
        }
    }

    private func changeWithTheFault(_ fixture: Fixture, scratch: String) throws {
        let fault = try Harness.run("chattr", ["+a", scratch])
        guard fault.status == 0 else {
            throw HarnessError("the cache's file system takes no append-only flag (chattr +a): \(fault.stderr)")
        }
        try fixture.origin.replace("ep1.mp3", Harness.bytes(count: Self.newSize, seed: 39))
        // Past the revalidation time: the next open asks the origin, whose
        // head shows the new version.
        Thread.sleep(forTimeInterval: 1.5)
        let partial = fixture.directory + "/partial"
        let read = try Harness.run(
            "dd", ["if=\(fixture.path(0))", "of=\(partial)", "bs=64k", "iflag=direct"], timeout: 60)
        print("a read while the scratch file cannot be punched: dd exit \(read.status): \(read.stderr.suffix(120))")
        #expect(read.status != 0, "the new version is not served before the old one's bytes are freed")
        #expect(try Data(contentsOf: URL(fileURLWithPath: partial)).isEmpty, "not one byte of either version")
        // The fault happened: the punch failed, and the episode stopped.
        let failures = failedSteps(fixture)
        #expect(
            failures.contains { $0.contains("free space in the cache file") && $0.contains("EPERM") },
            "the log names the failed punch: \(failures)")
        #expect(fixture.log().contains("could not forget its old bytes yet"), "the log says the episode stopped")
        try expectNoNewByte(in: scratch, fixture)
    }

    /// Every page of `scratch` holds the old version's bytes or a hole,
    /// never the new version's, and the cached head is still there (no
    /// punch happened): the episode's file is one version, the old.
    private func expectNoNewByte(in scratch: String, _ fixture: Fixture) throws {
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: scratch))
        let old = fixture.episodes[0].data
        let new = try Data(contentsOf: URL(fileURLWithPath: fixture.originPath(0)))
        #expect(onDisk.count == Self.size, "not resized: \(onDisk.count) bytes")
        // Compared outside `#expect`, which would diff a MiB on failure.
        let headIntact = onDisk.prefix(1024 * 1024) == old.prefix(1024 * 1024)
        #expect(headIntact, "the old version's cached head is intact")
        let page = 4096
        let newPages = stride(from: 0, to: min(onDisk.count, new.count), by: page).filter { start in
            let end = min(start + page, onDisk.count, new.count)
            return onDisk[start..<end] == new[start..<end]
        }
        #expect(newPages.isEmpty, "pages of the new version in the old one's file at \(newPages.prefix(8))")
    }

    /// The log's lines for a version change's durable step that failed.
    private func failedSteps(_ fixture: Fixture) -> [Substring] {
        fixture.log().split(separator: "\n").filter {
            $0.contains("could not record a change of an episode's version in the cache")
        }
    }

    /// A read of the episode's first 64 KiB; `true` when it got EIO.
    private func readFails(_ fixture: Fixture) throws -> Bool {
        let read = try Harness.run(
            "dd", ["if=\(fixture.path(0))", "of=/dev/null", "bs=64k", "count=1", "iflag=direct"], timeout: 60)
        return read.status != 0 && read.stderr.contains("Input/output error")
    }

    /// The new version's length as the index stores it, or the old one's.
    private func storedLength(_ fixture: Fixture) throws -> Int {
        let script =
            "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True); "
            + "print(c.execute('SELECT length FROM episodes').fetchone()[0])"
        let output = try Harness.run("python3", ["-c", script, fixture.cacheDirectory + "/index.sqlite"])
        return Int(output.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Ends the fault (again: a second call finds it ended).
    private func clearFault(_ scratch: String) {
        _ = try? Harness.run("chattr", ["-a", scratch])
    }

    /// Once the file can be punched again, a retry does the steps and the
    /// episode reads again: the new version, whole; the index lists only
    /// its bytes.
    @Test(.needs(Self.appendOnly)) func theEpisodeReadsAgainOnceItsFileCanBeFreed() throws {
        let (fixture, scratch) = try changeBehindAnAppendOnlyFile()
        defer {
            clearFault(scratch)
            fixture.cleanup()
        }
        // The retry a second later meets the fault too: the episode stays
        // stopped, and its file one version.
        #expect(Harness.eventually(30) { failedSteps(fixture).count >= 2 }, "a retry failed")
        #expect(try readFails(fixture), "a read after a failed retry gets EIO")
        try expectNoNewByte(in: scratch, fixture)
        clearFault(scratch)
        #expect(Harness.eventually(30) { fixture.log().contains("it reads again") }, "the steps were done")
        #expect(try fixture.hashOfCopy() == fixture.originHash(), "the new version, whole")
        try fixture.unmount()
        #expect(try storedLength(fixture) == Self.newSize, "the index took the new version")
        #expect(try fixture.checkIndex(0) == Self.newSize, "every listed byte is new")
    }

    /// Killed while the file still cannot be punched: the cache holds one
    /// version, the old one (its validator, no byte of the new version
    /// anywhere). Remounted once the fault is gone, the episode reads as
    /// the new version whole.
    @Test(.needs(Self.appendOnly)) func aKillWhileTheFileCannotBeFreedLeavesOneVersion() throws {
        let (fixture, scratch) = try changeBehindAnAppendOnlyFile()
        defer {
            clearFault(scratch)
            fixture.cleanup()
        }
        let pid = try #require(fixture.daemonPID)
        kill(pid, SIGKILL)
        try Harness.sh("fusermount3 -u -z '\(fixture.mountpoint)' || true")
        let old = fixture.directory + "/old.mp3"
        try fixture.episodes[0].data.write(to: URL(fileURLWithPath: old))
        let check = try Harness.run(
            "python3", [Harness.root + "/Tests/Origin/check_index.py", fixture.cacheDirectory, old])
        print("after the kill: \(check.text)")
        #expect(check.status == 0, "every byte the index lists is the old version's: \(check.text) \(check.stderr)")
        #expect(try storedLength(fixture) == Self.size, "the index still describes the old version")
        try expectNoNewByte(in: scratch, fixture)
        clearFault(scratch)
        try fixture.mount()
        #expect(try fixture.hashOfCopy() == fixture.originHash(), "the new version, whole")
        try fixture.unmount()
        #expect(try fixture.checkIndex(0) == Self.newSize, "every listed byte is new")
    }
}
