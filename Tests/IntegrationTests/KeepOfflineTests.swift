import Foundation
import Testing

/// Offline by policy (docs/DESIGN.md): `-o keep_latest=N`, pins and a
/// show's own N as extended attributes, kept episodes spared by the cap,
/// and downloads that give way to a reader.
@Suite(.serialized, .needsRoot)
struct KeepOfflineTests {
    private static let mib = 1024 * 1024

    /// Cached bytes per origin file name, from `podfs status --json`.
    private static func cached(_ fixture: Fixture) throws -> [String: Int64] {
        Dictionary(
            try fixture.cachedBytes().map { (String($0.key.split(separator: "/").last ?? ""), $0.value) },
            uniquingKeysWith: { first, _ in first })
    }

    /// Waits until the index holds every byte of each of `files` (their
    /// origin names), or fails after `timeout` seconds.
    private static func waitUntilCached(
        _ fixture: Fixture, _ files: [(name: String, size: Int)], timeout: Double = 90
    ) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var cached: [String: Int64] = [:]
        while Date() < deadline {
            cached = try Self.cached(fixture)
            if files.allSatisfy({ cached[$0.name] == Int64($0.size) }) { return }
            Thread.sleep(forTimeInterval: 0.2)
        }
        Issue.record("not all kept in \(timeout) s: \(cached)\nlog: \(fixture.log().suffix(3000))")
    }

    private static func getfattr(_ path: String, _ name: String) throws -> Harness.Output {
        try Harness.run("getfattr", ["--only-values", "-n", name, path])
    }

    private static func setfattr(_ path: String, _ name: String, _ value: String?) throws -> Harness.Output {
        try Harness.run("setfattr", value.map { ["-n", name, "-v", $0, path] } ?? ["-x", name, path])
    }

    @Test func theNewestNOfTheShowAreKeptCompleteAndPlayWithTheOriginGone() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size, size, size]))
        try fixture.mount(extra: ["-o", "keep_latest=2"])
        // Nothing reads the mount: the keeper alone fetches the newest two.
        try Self.waitUntilCached(fixture, [("ep4.mp3", size), ("ep3.mp3", size)])
        let sent = try fixture.origin.bytesSent("ep3.mp3") + fixture.origin.bytesSent("ep4.mp3")
        #expect(Double(sent) <= 1.02 * Double(2 * size), "origin bytes \(sent) for \(2 * size) kept")
        #expect(try fixture.origin.bytesSent("ep1.mp3") == 0 && fixture.origin.bytesSent("ep2.mp3") == 0)
        #expect(try Self.getfattr(fixture.path(3), "user.podfs.kept").text == "latest")
        #expect(try Self.getfattr(fixture.path(0), "user.podfs.kept").text == "no")
        #expect(try Self.getfattr(fixture.mountpoint + "/" + Fixture.showTitle, "user.podfs.keep_latest").text == "2")
        // The report is written at most once a second.
        var status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        let written = Date().addingTimeInterval(10)
        while Date() < written, !status.text.contains("2 of 2 complete") {
            Thread.sleep(forTimeInterval: 0.2)
            status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        }
        #expect(status.text.contains("Kept offline: newest 2 per show"), "\(status.text)")
        #expect(status.text.contains("\(Fixture.showTitle): newest 2, 2 of 2 complete"), "\(status.text)")

        // The network gone: every kept episode plays byte for byte.
        try fixture.unmount()
        fixture.origin.stop()
        try fixture.mount(extra: ["-o", "keep_latest=2"])
        for index in [2, 3] {
            #expect(try fixture.hashOfCopy(index) == fixture.originHash(index), "episode \(index + 1) offline")
        }

        // No mount running: the last mount's report, as the index has it.
        try fixture.unmount()
        let after = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        #expect(after.text.contains("newest 2, 2 of 2 complete") && after.text.contains("no mount is running"), "\(after.text)")
        let cleared = try Harness.run(Harness.podfs, ["cache", "clear", "--all", "--cache-dir", fixture.cacheDirectory])
        #expect(cleared.status == 0, "\(cleared.stderr)")
        let empty = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        #expect(empty.text.contains("newest 2, 0 of 2 complete") && !empty.text.contains("downloading"), "\(empty.text)")
    }

    /// An unmount while a download is under way is no failure: the log has
    /// no error or warning of it (an audit saw eight errors and two
    /// "could not keep" warnings at every clean unmount).
    @Test func anUnmountDuringADownloadLogsNoFailure() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 4 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size]))
        try fixture.origin.configure(#"{"stall": {"path": "/ep2.mp3", "after_bytes": 1048576, "seconds": 20, "count": -1}}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.mount(extra: ["-o", "keep_latest=1"])
        #expect(Harness.eventually { ((try? fixture.origin.bytesSent("ep2.mp3")) ?? 0) >= 1_048_576 || ((try? fixture.origin.stats()["in_progress"] as? NSNumber)?.intValue ?? 0) > 0 })
        Thread.sleep(forTimeInterval: 0.5)
        try fixture.unmount()
        let lines = fixture.log().split(separator: "\n").filter { $0.contains(" error ") || $0.contains(" warning ") }
        #expect(lines.isEmpty, "\(lines.joined(separator: "\n"))")
    }

    /// A feed that moves a kept episode to another file while it downloads:
    /// the download of the old file stops at once, its bytes go, and the
    /// new file is kept (an end-to-end check saw the old file fetched to
    /// its end first).
    @Test func aKeptDownloadFollowsItsEpisodeToANewFile() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        let new = Harness.bytes(count: size + 1_000, seed: 99)
        try fixture.origin.put("moved/ep1.mp3", new)
        try fixture.origin.configure(#"{"pace": {"/ep1.mp3": 200000}}"#)
        try fixture.mount(extra: ["-o", "keep_latest=1,refresh=1"])
        #expect(Harness.eventually { ((try? fixture.origin.bytesSent("ep1.mp3")) ?? 0) > 0 || ((try? fixture.origin.serving().responses) ?? 0) > 0 })
        Thread.sleep(forTimeInterval: 1)
        let feed = String(decoding: try #require(FileManager.default.contents(atPath: fixture.origin.root + "/feed.xml")), as: UTF8.self)
            .replacingOccurrences(of: "{{BASE}}/ep1.mp3", with: "{{BASE}}/moved/ep1.mp3")
            .replacingOccurrences(of: "length=\"\(size)\"", with: "length=\"\(size + 1_000)\"")
        try fixture.origin.replace("feed.xml", Data(feed.utf8))
        #expect(
            Harness.eventually(30) { ((try? Self.cached(fixture)["ep1.mp3"]) ?? 0) == Int64(size + 1_000) },
            "the new file is kept; log: \(fixture.log().suffix(3000))")
        let old = try fixture.origin.bytesSent("ep1.mp3")
        #expect(old < Int64(size / 2), "the old file's download stopped: \(old) of \(size) bytes sent")
        #expect(try fixture.origin.bytesSent("moved/ep1.mp3") <= Int64(Double(size + 1_000) * 1.02))
        try fixture.unmount()
    }

    @Test func aNewEpisodeIsKeptAfterARefreshAndTheOneThatLeftIsNoLongerKept() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 2 * Self.mib
        let all = Fixture.episodes(sizes: [size, size, size])
        try fixture.publish(Array(all.prefix(2)))
        try fixture.mount(extra: ["-o", "keep_latest=1,refresh=1"])
        try Self.waitUntilCached(fixture, [("ep2.mp3", size)])
        #expect(try Self.getfattr(fixture.path(1), "user.podfs.kept").text == "latest")
        try fixture.publish(all)
        try Self.waitUntilCached(fixture, [("ep3.mp3", size)])
        #expect(try Self.getfattr(fixture.path(2), "user.podfs.kept").text == "latest")
        // Ordinary cache now, not deleted.
        #expect(try Self.getfattr(fixture.path(1), "user.podfs.kept").text == "no")
        #expect(try Self.cached(fixture)["ep2.mp3"] == Int64(size))
        #expect(try fixture.origin.bytesSent("ep1.mp3") == 0)
    }

    @Test func aPinKeepsAnOldEpisodeAndAnUnpinLetsItGo() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 2 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size, size]))
        try fixture.mount()
        let oldest = fixture.path(0)
        #expect(try Self.getfattr(oldest, "user.podfs.kept").text == "no")
        #expect(try Self.getfattr(oldest, "user.podfs.pinned").status != 0, "no pin yet")
        let pin = try Self.setfattr(oldest, "user.podfs.pinned", "1")
        #expect(pin.status == 0, "\(pin.stderr)")
        try Self.waitUntilCached(fixture, [("ep1.mp3", size)])
        #expect(try Self.getfattr(oldest, "user.podfs.pinned").text == "1")
        #expect(try Self.getfattr(oldest, "user.podfs.kept").text == "pinned")
        let listed = try Harness.run("getfattr", ["-d", oldest]).text
        #expect(listed.contains("user.podfs.pinned=\"1\"") && listed.contains("user.podfs.kept=\"pinned\""), "\(listed)")
        #expect(try fixture.origin.bytesSent("ep2.mp3") == 0 && fixture.origin.bytesSent("ep3.mp3") == 0)

        // A bad value is refused and changes nothing; the log says why.
        let bad = try Self.setfattr(fixture.path(1), "user.podfs.pinned", "yes")
        #expect(bad.status != 0 && bad.stderr.contains("Invalid argument"), "\(bad.stderr)")
        #expect(fixture.log().contains("needs 1 to pin or 0 to unpin"))
        let badN = try Self.setfattr(fixture.mountpoint + "/" + Fixture.showTitle, "user.podfs.keep_latest", "-1")
        #expect(badN.status != 0 && badN.stderr.contains("Invalid argument"), "\(badN.stderr)")
        // Nothing else can be set: the file system is read only.
        let other = try Self.setfattr(oldest, "user.other", "x")
        #expect(other.status != 0 && other.stderr.contains("Read-only file system"), "\(other.stderr)")

        // The settings survive a remount.
        try fixture.unmount()
        try fixture.mount()
        #expect(try Self.getfattr(oldest, "user.podfs.kept").text == "pinned")
        let unpin = try Self.setfattr(oldest, "user.podfs.pinned", nil)
        #expect(unpin.status == 0, "\(unpin.stderr)")
        #expect(try Self.getfattr(oldest, "user.podfs.kept").text == "no")
        #expect(try Self.setfattr(oldest, "user.podfs.pinned", nil).status != 0, "no pin to remove")

        // A show's own N, and back to the mount's.
        let show = fixture.mountpoint + "/" + Fixture.showTitle
        #expect(try Self.setfattr(show, "user.podfs.keep_latest", "1").status == 0)
        #expect(try Self.getfattr(show, "user.podfs.keep_latest").text == "1")
        try Self.waitUntilCached(fixture, [("ep3.mp3", size)])
        #expect(try Self.getfattr(fixture.path(2), "user.podfs.kept").text == "latest")
        #expect(try Self.setfattr(show, "user.podfs.keep_latest", nil).status == 0)
        #expect(try Self.getfattr(show, "user.podfs.keep_latest").text == "0")
        #expect(try Self.getfattr(fixture.path(2), "user.podfs.kept").text == "no")

        // `cache clear` spares a pinned episode unless told --all.
        #expect(try Self.setfattr(oldest, "user.podfs.pinned", "1").status == 0)
        try fixture.unmount()
        let clear = try Harness.run(Harness.podfs, ["cache", "clear", "--cache-dir", fixture.cacheDirectory])
        #expect(clear.status == 0 && clear.text.contains("Kept 1 pinned episode"), "\(clear.text) \(clear.stderr)")
        var cached = try Self.cached(fixture)
        #expect(cached["ep1.mp3"] == Int64(size) && cached["ep3.mp3"] == 0, "\(cached)")
        let all = try Harness.run(Harness.podfs, ["cache", "clear", "--all", "--cache-dir", fixture.cacheDirectory])
        #expect(all.status == 0, "\(all.stderr)")
        cached = try Self.cached(fixture)
        #expect(cached["ep1.mp3"] == 0, "\(cached)")
    }

    @Test func aPinThatCannotFitTheCapIsRefusedWithENOSPC() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib, 2 * Self.mib]))
        try fixture.mount(extra: ["-o", "cache_size=3M"])
        #expect(try Self.setfattr(fixture.path(0), "user.podfs.pinned", "1").status == 0)
        let refused = try Self.setfattr(fixture.path(1), "user.podfs.pinned", "1")
        #expect(refused.status != 0 && refused.stderr.contains("No space left on device"), "\(refused.stderr)")
        #expect(fixture.log().contains("would not fit the cache's cap"))
        #expect(try Self.getfattr(fixture.path(1), "user.podfs.kept").text == "no")
    }

    @Test func aCapThatForcesEvictionSparesKeptAndPinnedEpisodes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 2 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size, size, size, size]))
        try fixture.mount(extra: ["-o", "keep_latest=1,cache_size=7M"])
        #expect(try Self.setfattr(fixture.path(0), "user.podfs.pinned", "1").status == 0)
        try Self.waitUntilCached(fixture, [("ep5.mp3", size), ("ep1.mp3", size)])
        // 6 MiB more read through the mount: 10 MiB in a 7 MiB cap.
        for index in [1, 2, 3] {
            #expect(try fixture.hashOfCopy(index) == fixture.originHash(index))
        }
        // The reads are committed within a second, then evicted.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !fixture.log().contains("evicted episodes to keep the cache under its cap") {
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(fixture.log().contains("evicted episodes to keep the cache under its cap"), "\(fixture.log())")
        var cached = try Self.cached(fixture)
        #expect(cached.values.reduce(0, +) <= 7 * Int64(Self.mib), "evicted down to the cap: \(cached)")
        #expect(cached["ep1.mp3"] == Int64(size) && cached["ep5.mp3"] == Int64(size), "kept and pinned spared: \(cached)")

        // A remount with a smaller cap evicts before anything is planned:
        // what the last mount kept is spared from the first eviction on
        // (never read, it would otherwise go first).
        try fixture.unmount()
        let before = cached.values.reduce(0, +)
        #expect(before > 5 * Int64(Self.mib), "over the next cap: \(cached)")
        // Without the last mount's list of shows, the mount shows the kept
        // copies and evicts at once, before the keeper has planned.
        try FileManager.default.removeItem(atPath: fixture.cacheDirectory + "/shows.json")
        try fixture.mount(extra: ["-o", "keep_latest=1,cache_size=5M"])
        let remounted = Date().addingTimeInterval(30)
        while Date() < remounted, try Self.cached(fixture).values.reduce(0, +) > 5 * Int64(Self.mib) {
            Thread.sleep(forTimeInterval: 0.2)
        }
        cached = try Self.cached(fixture)
        #expect(cached.values.reduce(0, +) <= 5 * Int64(Self.mib), "evicted down to the new cap: \(cached)")
        #expect(cached["ep1.mp3"] == Int64(size) && cached["ep5.mp3"] == Int64(size), "kept and pinned spared: \(cached)")
    }

    @Test func anotherUserCannotChangeWhatIsKept() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.mib]))
        // Another user must reach the mount: the folders above it (the test
        // run's private TMPDIR) get search permission, no more.
        var folder = fixture.directory
        while folder != "/" {
            _ = try Harness.run("chmod", ["o+x", folder])
            folder = (folder as NSString).deletingLastPathComponent
        }
        try fixture.mount(extra: ["-o", "allow_other"])
        let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
        let refused = try Harness.run(
            "setpriv", nobody + ["setfattr", "-n", "user.podfs.pinned", "-v", "1", fixture.path(0)])
        #expect(refused.status != 0 && refused.stderr.contains("Operation not permitted"), "\(refused.stderr)")
        let show = fixture.mountpoint + "/" + Fixture.showTitle
        let refusedShow = try Harness.run(
            "setpriv", nobody + ["setfattr", "-n", "user.podfs.keep_latest", "-v", "1", show])
        #expect(refusedShow.status != 0 && refusedShow.stderr.contains("Operation not permitted"))
        // Reading them is anyone's.
        let read = try Harness.run("setpriv", nobody + ["getfattr", "--only-values", "-n", "user.podfs.kept", fixture.path(0)])
        #expect(read.status == 0 && read.text == "no", "\(read.stderr)")
        #expect(try Self.getfattr(fixture.path(0), "user.podfs.pinned").status != 0, "nothing was pinned")
        #expect(fixture.log().contains("refused a change of user.podfs.pinned by another user"))
        // Changing the tree stays refused, for the owner and for others
        // (the mount is not "ro": podfs refuses each change itself).
        let file = fixture.path(0)
        let changes = [
            "echo x >> '\(file)'", "truncate -s 0 '\(file)'", "touch '\(file)'", "chmod 777 '\(file)'",
            "rm -f '\(file)'", "mv '\(file)' '\(fixture.mountpoint)/moved'", "mkdir '\(fixture.mountpoint)/new'",
            "ln -s x '\(fixture.mountpoint)/link'", "python3 -c 'import os,sys; os.open(sys.argv[1], os.O_RDONLY | os.O_TRUNC)' '\(file)'",
        ]
        for change in changes {
            for prefix in [[], ["setpriv"] + nobody] {
                let result = try Harness.run(prefix.first ?? "sh", Array(prefix.dropFirst()) + (prefix.isEmpty ? ["-c", change] : ["sh", "-c", change]))
                #expect(result.status != 0 && result.stderr.contains("Read-only file system"), "\(prefix) \(change): \(result.stderr)")
            }
        }
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0), "the episode is whole and unchanged")
    }

    @Test func aDownloadGivesWayToAReaderAndResumesWhereItStopped() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 12 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [4 * Self.mib, size]))
        // The kept episode comes slowly: a reader arrives while it is on
        // its way.
        try fixture.origin.configure(#"{"pace": {"/ep2.mp3": 2000000}}"#)
        try fixture.mount(extra: ["-o", "keep_latest=1", "--log-level", "debug"])
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, try fixture.origin.bytesSent("ep2.mp3") < 2 * Int64(Self.mib) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let before = try fixture.origin.bytesSent("ep2.mp3")
        #expect(before >= 2 * Int64(Self.mib) && before < Int64(size), "the keeper is downloading: \(before)")
        // A player reads the other episode whole.
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        #expect(fixture.log().contains("keeping an episode offline: paused for a reader"), "\(fixture.log().suffix(3000))")
        try Self.waitUntilCached(fixture, [("ep2.mp3", size)], timeout: 60)
        // The open's probe, the first fill, and the fill that resumed
        // where the first stopped (past the 2 MiB it had brought).
        let ranges = try fixture.origin.ranges("ep2.mp3")
        let starts = ranges.compactMap { range in
            range.split(separator: "=").last?.split(separator: "-").first.flatMap { Int64($0) }
        }
        #expect(starts.contains { $0 >= before }, "stopped and asked again from where it was: \(ranges)")
        let sent = try fixture.origin.bytesSent("ep2.mp3")
        #expect(Double(sent) <= 1.02 * Double(size), "origin bytes \(sent) for \(size)")
        #expect(try fixture.hashOfCopy(1) == fixture.originHash(1))
    }
}
