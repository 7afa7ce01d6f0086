import Foundation
import Testing

/// A cache on a small tmpfs that episodes larger than it fill: reads still
/// get every byte of the origin, podfs logs the full disk once, evicts
/// least recently read episodes that are not open, caches again when there
/// is room, and its index never lists a byte that is not on disk.
@Suite(.serialized, .needsRoot)
struct FullDiskTests {
    private static let mib = 1024 * 1024

    /// A fixture whose cache directory is an 8 MiB tmpfs; `done` stops the
    /// mount, unmounts the tmpfs and removes the test's directory.
    private static func onSmallDisk() throws -> (fixture: Fixture, done: () -> Void) {
        let fixture = try Fixture()
        let disk = fixture.cacheDirectory
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try Harness.sh("mount -t tmpfs -o size=8m podfs-test-tmpfs '\(disk)'")
        return (fixture, {
            fixture.cleanup()
            _ = try? Harness.run("umount", [disk], timeout: 30)
            if Fixture.isMounted(disk) { _ = try? Harness.run("umount", ["-l", disk], timeout: 30) }
            if ProcessInfo.processInfo.environment["PODFS_KEEP_TEST_DIRS"] == nil {
                _ = try? Harness.run("rm", ["-rf", fixture.directory], timeout: 60)
            }
        })
    }

    @Test func aFullDiskNeverFailsAReadAndTheIndexStaysTrue() throws {
        let (fixture, done) = try Self.onSmallDisk()
        defer { done() }
        let disk = fixture.cacheDirectory
        // Episode 2 fits on the disk with room to spare; 1 and 3 do not fit beside it.
        let sizes = [12 * Self.mib + 5, 3 * Self.mib, 6 * Self.mib]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        let log = fixture.directory + "/podfs.log"
        // A cap far above the disk: the disk fills before the cap evicts.
        try fixture.mount(extra: ["--cache-size", "1G", "--log-file", log])
        func check(_ index: Int, direct: Bool = false) throws {
            let copy = fixture.directory + "/copy\(index)"
            let command = direct
                ? "dd if='\(fixture.path(index))' iflag=direct bs=1M status=none > '\(copy)'"
                : "cat '\(fixture.path(index))' > '\(copy)'"
            try Harness.sh(command, timeout: 120)
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)), "episode \(index + 1)")
            try FileManager.default.removeItem(atPath: copy)
        }
        /// Reads episode `index` with O_DIRECT while the origin holds its
        /// body after 64 KiB, until `event` holds (or 60 s pass): the episode
        /// is open and read from memory all that time. Returns whether the
        /// event came.
        func readHeld(_ index: Int, until event: () throws -> Bool) throws -> Bool {
            let file = fixture.episodes[index].file
            try fixture.origin.configure(#"{"hold": {"path": "/\#(file)", "after_bytes": 65536, "count": 1}}"#)
            let copy = fixture.directory + "/copy\(index)"
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            let reader = try Harness.spawn(
                "dd", ["if=\(fixture.path(index))", "of=\(copy)", "iflag=direct", "bs=1M", "status=none"],
                stdout: devNull, stderr: devNull)
            var status: Int32 = -1
            defer { if kill(reader, 0) == 0 { kill(reader, SIGKILL); waitpid(reader, &status, 0) } }
            let held = Harness.eventually(60) { (try? fixture.origin.held()) == 1 }
            let happened = try held && Harness.eventually(60, event)
            try fixture.origin.clearFaults()  // and lets the held body go on
            #expect(Harness.eventually(120) { waitpid(reader, &status, WNOHANG) == reader }, "the reader ended")
            #expect(status == 0, "dd of episode \(index + 1) exited with \(status)")
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)), "episode \(index + 1)")
            try FileManager.default.removeItem(atPath: copy)
            return held && happened
        }
        func diskUsed() throws -> Int {
            Int(try Harness.sh("df -B1 --output=used '\(disk)' | tail -1").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        func evictions() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
                .components(separatedBy: "evicted episodes to make room").count - 1
        }
        func status() -> [String: Int] { (try? CacheStatus(disk).cached) ?? [:] }

        // 1. Episode 1 alone is larger than the disk: the rest comes from memory.
        try check(0)
        #expect(Harness.eventually { (status()[fixture.name(0)] ?? 0) > 0 }, "part of episode 1 is committed")
        var cached = try CacheStatus(disk).cached
        let first = cached[fixture.name(0)] ?? -1
        #expect(first > 0 && first < sizes[0], "part of episode 1 is cached, not all: \(cached)")
        try fixture.checkIndex(0)
        var text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(text.contains("the cache's disk is full"), "the full disk is logged")

        // 2. Episode 1 is closed and least recently read: evicted to make room
        // for episode 2, which is cached again (reads recover). Its body is
        // held until then, so the flush thread sees episode 2 open.
        #expect(evictions() == 0)
        let evictedFirst = try readHeld(1) { evictions() == 1 && status()[fixture.name(0)] == 0 }
        #expect(evictedFirst, "episode 1 was evicted while episode 2 was read: \(status())")
        // What was served from memory meanwhile is fetched again and cached.
        try check(1)
        #expect(
            Harness.eventually { status()[fixture.name(1)] == sizes[1] },
            "episode 2 was cached after the eviction: \(status())")
        for index in sizes.indices { try fixture.checkIndex(index) }

        // 3. Episode 2 is held open and is the least recently read: while
        // episode 3 and then episode 1 are read on the full disk, an eviction
        // happens, and it takes episode 3, never episode 2.
        try fixture.origin.reset()
        let readAt = try #require(try CacheStatus(disk)[fixture.name(1)]?.lastRead)
        // Episode 3 is read in a later second than episode 2 (last reads
        // are kept in seconds).
        #expect(Harness.eventually { Int(Date().timeIntervalSince1970) > readAt })
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let holder = try Harness.spawn(
            "sh", ["-c", "exec 3<'\(fixture.path(1))'; exec sleep 300"], stdout: devNull, stderr: devNull)
        var holderStatus: Int32 = 0
        defer { if kill(holder, SIGKILL) == 0 { waitpid(holder, &holderStatus, 0) } }
        // The holder has the episode open once its shell has exec'd sleep.
        #expect(Harness.eventually {
            ((try? String(contentsOfFile: "/proc/\(holder)/comm", encoding: .utf8)) ?? "").hasPrefix("sleep")
        })
        try check(2)
        #expect(
            Harness.eventually { (status()[fixture.name(2)] ?? 0) > 0 }, "part of episode 3 is cached: \(status())")
        let before = evictions()
        let evictedThird = try readHeld(0) { evictions() > before && status()[fixture.name(2)] == 0 }
        cached = try CacheStatus(disk).cached
        #expect(evictedThird, "an eviction ran while episode 2 was open, and took episode 3: \(cached)")
        #expect(cached[fixture.name(1)] == sizes[1], "an open episode is never evicted: \(cached)")
        #expect(
            (try CacheStatus(disk)[fixture.name(2)]?.lastRead ?? 0) > readAt,
            "episode 2 was the least recently read")
        for index in sizes.indices { try fixture.checkIndex(index) }
        let used = try diskUsed()
        let originBytes = try fixture.origin.bytesSent("ep3.mp3") + fixture.origin.bytesSent("ep1.mp3")
        kill(holder, SIGKILL)
        waitpid(holder, &holderStatus, 0)

        // 4. Random O_DIRECT reads through podfs, every byte against the origin.
        var generator = SplitMix(seed: 8)
        for round in 0..<12 {
            let index = Int(generator.next() % UInt64(sizes.count))
            let blocks = sizes[index] / 65536
            let block = Int(generator.next() % UInt64(blocks))
            let out = fixture.directory + "/piece"
            try Harness.sh(
                "dd if='\(fixture.path(index))' iflag=direct bs=64k skip=\(block) count=1 status=none > '\(out)'")
            let got = try Data(contentsOf: URL(fileURLWithPath: out))
            let want = fixture.episodes[index].data.subdata(in: block * 65536..<(block + 1) * 65536)
            #expect(got == want, "round \(round): episode \(index + 1) at block \(block)")
        }
        try fixture.unmount()

        // Logged once, not per chunk; no other errors; the index verifies clean.
        text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let warnings = text.components(separatedBy: "the cache's disk is full").count - 1
        #expect(warnings == 1, "logged once: \(warnings) times")
        #expect(!text.contains("could not commit the cache index"), "no commit errors")
        #expect(text.contains("evicted episodes to make room"), "the eviction is logged")
        for index in sizes.indices { try fixture.checkIndex(index) }
        let verify = try Harness.run(Harness.podfs, ["cache", "verify", "--cache-dir", disk])
        #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")
        print(
            "full disk figures: tmpfs 8 MiB, episodes \(sizes) bytes; cached after step 1: \(first) bytes; "
                + "disk used at step 3: \(used) bytes; origin bytes for episodes 3 and 1 in step 3: \(originBytes)")
    }

    /// A full disk whose room comes back by itself (a larger volume, a file
    /// deleted) caches again at the next flush pass, with nobody asking for
    /// room and nothing evicted (a reader that closed left it "full").
    @Test func roomMadeBySomeoneElseLetsWritesResume() throws {
        let (fixture, done) = try Self.onSmallDisk()
        defer { done() }
        let disk = fixture.cacheDirectory
        let sizes = [12 * Self.mib + 5, 2 * Self.mib]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        try fixture.mount(extra: ["--cache-size", "1G"])
        func cached() -> [String: Int] { (try? CacheStatus(disk).cached) ?? [:] }
        try Harness.sh("cat '\(fixture.path(0))' > /dev/null", timeout: 60)
        #expect(fixture.log().contains("the cache's disk is full"))
        Thread.sleep(forTimeInterval: 2)
        #expect(!fixture.log().contains("has room again"), "no room was made: \(fixture.log().suffix(2000))")
        try Harness.sh("mount -o remount,size=64m '\(disk)'")
        #expect(
            Harness.eventually(15) { fixture.log().contains("the cache's disk has room again") },
            "writes resume: \(fixture.log().suffix(2000))")
        #expect(!fixture.log().contains("evicted episodes to make room"), "nothing was evicted for it")
        try Harness.sh("cat '\(fixture.path(1))' > /dev/null", timeout: 60)
        #expect(Harness.eventually { cached()[fixture.name(1)] == sizes[1] }, "cached again: \(cached())")
        try fixture.unmount()
    }

    /// Downloads kept by policy that fill the disk wait for room instead of
    /// fetching bytes to throw away: the flush thread evicts an episode
    /// that is neither open nor kept for them, and writes resume when the
    /// disk has room again by itself (a larger volume), each byte fetched
    /// once (an audit saw the keeper stuck until a remount, fetching 3.9 MB
    /// a minute to drop it).
    @Test func keptDownloadsThatFillTheDiskWaitForRoomAndResume() throws {
        let (fixture, done) = try Self.onSmallDisk()
        defer { done() }
        let disk = fixture.cacheDirectory
        // Episode 1 (oldest) is read and cached; then the newest two are kept.
        let sizes = [4 * Self.mib, 3 * Self.mib + 7, 5 * Self.mib + 3]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        try fixture.mount(extra: ["--cache-size", "1G"])
        func cached() -> [String: Int] { (try? CacheStatus(disk).cached) ?? [:] }
        try Harness.sh("cat '\(fixture.path(0))' > /dev/null", timeout: 60)
        #expect(Harness.eventually { cached()[fixture.name(0)] == sizes[0] }, "episode 1 is cached")

        // The newest (5 MiB) does not fit beside it: episode 1 is evicted for it.
        let show = fixture.mountpoint + "/" + Fixture.showTitle
        try Harness.sh("setfattr -n user.podfs.keep_latest -v 1 '\(show)'")
        #expect(
            Harness.eventually(60) { cached()[fixture.name(2)] == sizes[2] },
            "the kept episode is complete: \(cached()); log: \(fixture.log().suffix(3000))")
        #expect((cached()[fixture.name(0)] ?? 0) == 0, "episode 1 made room")
        #expect(fixture.log().contains("evicted episodes to make room"))

        // Two kept: 8.3 MiB on an 8 MiB disk, nothing left to evict. The
        // download waits, and goes on once the volume is larger.
        try Harness.sh("setfattr -n user.podfs.keep_latest -v 2 '\(show)'")
        #expect(
            Harness.eventually(60) { fixture.log().contains("waiting for room on the cache's full disk") },
            "the download waits for room; log: \(fixture.log().suffix(3000))")
        // (The fill the full disk cut ends at the origin a moment later.)
        Thread.sleep(forTimeInterval: 1)
        let waiting = try fixture.origin.bytesSent("ep2.mp3")
        Thread.sleep(forTimeInterval: 3)
        #expect(try fixture.origin.bytesSent("ep2.mp3") == waiting, "nothing is fetched while it waits")
        try Harness.sh("mount -o remount,size=24m '\(disk)'")
        #expect(
            Harness.eventually(60) { cached()[fixture.name(1)] == sizes[1] },
            "writes resume once the disk has room: \(cached()); log: \(fixture.log().suffix(3000))")
        // Bytes that came between the full disk and the download's stop
        // (20 ms of a loopback's pace) were dropped and are fetched again;
        // nothing more: no download fetched again every minute.
        for index in 1...2 {
            let sent = try fixture.origin.bytesSent("ep\(index + 1).mp3")
            #expect(sent <= sizes[index] + 3 * Self.mib, "episode \(index + 1): \(sent) bytes sent for \(sizes[index])")
        }
        try fixture.unmount()
    }

    @Test func aFileSizeLimitNeverFailsAReadEither() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib + 11
        try fixture.publish(Fixture.episodes(sizes: [size]))
        // Writes past 4 MiB fail with EFBIG (SIGXFSZ is ignored, not fatal).
        try fixture.mount(extra: ["--cache-size", "1G"], launcher: ["prlimit", "--fsize=\(4 * Self.mib)"])
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)), "every byte, past the limit too")
        try Harness.sh("dd if='\(fixture.path(0))' iflag=direct bs=1M status=none > '\(copy)'")
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)), "again through podfs")
        try fixture.unmount()
        // The scratch file cannot even be sized past the limit: nothing is
        // cached, and the index says so.
        let claimed = try fixture.checkIndex(0)
        #expect(claimed <= 4 * Self.mib, "only bytes below the limit could be cached: \(claimed)")
        let log = fixture.log()
        let failures = log.components(separatedBy: "could not write to the cache;").count - 1
        #expect(failures == 1, "logged once, not per chunk: \(failures) times")
        #expect(log.contains("EFBIG"), "the log names the cause")
    }
}
