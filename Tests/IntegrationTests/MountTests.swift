import Foundation
import Testing

/// Real mounts read by real programs against the test origin on 127.0.0.1.
/// Serialized: one mount at a time, each cleaned up even when it fails.
@Suite(.serialized, .needsRoot)
struct MountTests {
    private static let mib = 1024 * 1024

    @Test func listingShowsEpisodesWithRealSizesAndCatReadsTheOriginsBytes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib + 17, 200_000, 1]))
        try fixture.mount()
        let listing = try Harness.sh("ls -l '\(fixture.mountpoint)/\(Fixture.showTitle)'")
        #expect(listing.contains("2026-11-01 Episode 1.mp3"))
        #expect(listing.contains("\(3 * Self.mib + 17)"))
        #expect(listing.contains("200000"))
        #expect(try fixture.origin.requests("ep1.mp3") == 0, "ls -l must not fetch episodes")
        let mtime = try Harness.sh("stat -c %Y '\(fixture.path(1))'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(mtime == "1793613600", "mtime is the publication date (2026-11-02 10:00 UTC)")
        for index in 0..<3 {
            let copy = fixture.directory + "/copy\(index)"
            try Harness.sh("cat '\(fixture.path(index))' > '\(copy)'")
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)))
        }
        let xattr = try Harness.sh("getfattr --only-values -n user.podfs.url '\(fixture.path(0))'")
        #expect(xattr == "\(fixture.origin.base)/ep1.mp3")
        // No security labels or ACLs: "not supported" (which `ls -l` remembers
        // for the whole mount), not "no such attribute" (asked for each file).
        let label = try Harness.run("getfattr", ["-n", "security.selinux", fixture.path(0)])
        #expect(label.status != 0 && label.stderr.contains("Operation not supported"), "\(label.stderr)")
        let acl = try Harness.run("getfattr", ["-n", "system.posix_acl_access", fixture.path(0)])
        #expect(acl.status != 0 && acl.stderr.contains("Operation not supported"), "\(acl.stderr)")
        let unknown = try Harness.run("getfattr", ["-n", "user.podfs.nothing", fixture.path(0)])
        #expect(unknown.status != 0 && unknown.stderr.contains("No such attribute"), "\(unknown.stderr)")
        try fixture.unmount()
    }

    /// Programs that keep inode numbers in 32 bits (MPD) and compare a
    /// folder's `stat` with what `readdir` said: every node of the mount
    /// differs in its low 32 bits, and `st_ino` is `d_ino`, also after a
    /// remount that lists the shows from the kept list first.
    @Test func inodeNumbersDifferIn32BitsAndReaddirAgreesWithStat() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [1000, 2000, 3000]))
        let script = """
            import os, sys
            root = sys.argv[1]
            seen, bad = {}, []
            def note(path, ino):
                low = ino & 0xFFFFFFFF
                if low in seen and seen[low] != path: bad.append((path, seen[low], ino))
                seen[low] = path
            note(root, os.stat(root).st_ino)
            for top, dirs, files in os.walk(root):
                for entry in os.scandir(top):
                    if entry.inode() != os.stat(entry.path).st_ino: bad.append(("d_ino", entry.path, entry.inode()))
                    note(entry.path, entry.inode())
            print(len(seen), bad)
            """
        for mount in 1...2 {
            try fixture.mount()
            let output = try Harness.run("python3", ["-c", script, fixture.mountpoint])
            try fixture.unmount()
            print("mount \(mount): nodes and clashes \(output.text.trimmingCharacters(in: .whitespacesAndNewlines))")
            #expect(output.status == 0 && output.text.hasSuffix(" []\n"), "mount \(mount): \(output.text) \(output.stderr)")
            #expect(output.text.hasPrefix("7 "), "the root, Latest.m3u, the show, three episodes and the playlist")
        }
    }

    /// A stream no open file reads stops a grace after the last close
    /// (docs/DESIGN.md, "Who reads"), keeping what it brought; a file held
    /// open (a paused listener) keeps its stream going.
    @Test func aStreamNobodyReadsStopsAfterTheLastClose() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 64 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size]))
        // 2 MB/s: the read-ahead's 16 MiB window takes 8 s.
        try fixture.origin.configure(#"{"pace": {"*": 2000000}}"#)
        try fixture.mount()
        // A reader that moves on past the head, then leaves.
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=128k count=32 status=none")
        let settled = { (name: String) -> Int64 in
            var last: Int64 = -1
            var since = Date()
            _ = Harness.eventually(60) {
                let now = (try? fixture.origin.bytesSent(name)) ?? 0
                if now != last { (last, since) = (now, Date()) }
                return Date().timeIntervalSince(since) >= 1.5
            }
            return last
        }
        let left = settled("ep1.mp3")
        let cached = Harness.cachedBytes(fixture.path(0)) ?? 0
        // The same reader, but the file stays open 12 s (a paused player):
        // its window comes whole.
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let holder = try Harness.spawn(
            "sh", ["-c", "exec 3<'\(fixture.path(1))'; dd bs=128k count=32 status=none <&3 >/dev/null; exec sleep 12"],
            stdout: devNull, stderr: devNull)
        var holderStatus: Int32 = 0
        defer { if kill(holder, SIGKILL) == 0 { waitpid(holder, &holderStatus, 0) } }
        // While the holder keeps it open (12 s), its window comes whole.
        var kept: Int64 = 0
        _ = Harness.eventually(11) {
            kept = (try? fixture.origin.bytesSent("ep2.mp3")) ?? 0
            return kept > left + 4 * Int64(Self.mib)
        }
        #expect(Harness.isAlive(holder), "the file was still open when its stream went on")
        waitpid(holder, &holderStatus, 0)
        print("a reader that left after 4 MiB: \(left) bytes sent, \(cached) cached; one that held the file open: \(kept)")
        #expect(cached >= 4 * Int64(Self.mib) && cached <= left, "what came stays cached: \(cached)")
        #expect(kept > left + 4 * Int64(Self.mib), "the stream stopped (\(left)), an open file's went on (\(kept))")
        try fixture.unmount()
    }

    @Test func aLargeFeedListsCompletelyWithoutTouchingEpisodes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let count = 3000
        var items = ""
        for index in 0..<count {
            items += """
                <item><title>Talk \(index)</title><guid>big-\(index)</guid>
                <pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
                <enclosure url="{{BASE}}/big/\(index).mp3" length="\(1000 + index)" type="audio/mpeg"/></item>

                """
        }
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Big Show</title>\(items)</channel></rss>
            """
        try fixture.origin.put("feed.xml", Data(feed.utf8))
        let firstAndLast = ["Big Show/2026-11-01 Talk 0.mp3", "Big Show/2026-11-01 Talk \(count - 1).mp3"]
        try fixture.mount(waitFor: .paths(firstAndLast))
        try fixture.origin.reset()
        let show = "\(fixture.mountpoint)/Big Show"
        // Listings are paged by the kernel; every name must come exactly once.
        // The episodes and the show's playlist.
        let names = try Harness.sh("ls -U '\(show)'").split(separator: "\n")
        #expect(names.count == count + 1)
        #expect(Set(names).count == count + 1)
        #expect(names.contains("Big Show.m3u"))
        let long = try Harness.sh("ls -l '\(show)'")
        #expect(long.contains(" 3999 "), "sizes come with the listing")
        let files = try Harness.sh("find '\(show)' -type f | wc -l").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(files == String(count + 1))
        let stats = try fixture.origin.stats()
        #expect((stats["requests"] as? NSNumber)?.intValue == 0, "listing and stat never ask the origin")
        try fixture.unmount()
    }

    /// The mount rehearses a first read in its cache (`Rehearsal`): it is
    /// played, reaches no origin, and leaves nothing behind, also when a
    /// killed daemon left its directory.
    @Test func theMountRehearsesAFirstReadAndLeavesNothing() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [100_000]))
        let left = fixture.cacheDirectory + "/rehearsal"
        try FileManager.default.createDirectory(atPath: left + "/data", withIntermediateDirectories: true)
        try Data("left by a killed daemon".utf8).write(to: URL(fileURLWithPath: left + "/data/k"))
        try fixture.mount(extra: ["--log-level", "debug"])
        let played = Harness.eventually(10) { fixture.log().contains("rehearsed a first read") }
        #expect(played, "the log says it was rehearsed: \(fixture.log().suffix(2000))")
        let line = fixture.log().split(separator: "\n").first { $0.contains("rehearsed a first read") } ?? ""
        #expect(line.contains("played=true"), "\(line)")
        #expect(!FileManager.default.fileExists(atPath: left), "its directory is gone")
        let asked = (try fixture.origin.stats()["paths"] as? [String: Any])?.keys.sorted() ?? []
        #expect(asked == ["/feed.xml"], "the origin was asked for the feed alone: \(asked)")
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        #expect(try Harness.sha256(copy) == fixture.originHash(0))
        try fixture.unmount()
    }

    @Test func statusShowsWhatIsCachedWhileMounted() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        // The second is larger than any read-ahead of a near origin (two
        // 16 MiB windows past the reader), so reading 5 MiB (past the
        // head, `Tuning.head`) leaves its end uncached.
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib, 64 * Self.mib, 100_000]))
        try fixture.mount()
        try Harness.sh("cat '\(fixture.path(0))' > /dev/null")
        try Harness.sh("dd if='\(fixture.path(1))' bs=1M count=5 status=none > /dev/null")
        // Until the flush thread has committed what was read (and the
        // read-ahead the second read started past the head: its first
        // tenth and more).
        let committed = Harness.eventually(60) {
            let cached = (try? CacheStatus(fixture.cacheDirectory).cached) ?? [:]
            return cached[fixture.name(0)] == 2 * Self.mib && (cached[fixture.name(1)] ?? 0) >= 7 * Self.mib
        }
        #expect(committed, "the reads were committed: \((try? CacheStatus(fixture.cacheDirectory).cached) ?? [:])")
        let text = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.text.split(separator: "\n")
        let first = lines.first { $0.contains("2026-11-01 Episode 1.mp3") } ?? ""
        #expect(first.contains("100%") && first.contains("[██████████]"), "\(text.text)")
        let second = lines.first { $0.contains("2026-11-02 Episode 2.mp3") } ?? ""
        #expect(second.contains("[█") && second.contains("░]"), "partly cached: \(text.text)")
        let third = lines.first { $0.contains("2026-11-03 Episode 3.mp3") } ?? ""
        #expect(third.contains("[░░░░░░░░░░]"), "\(text.text)")
        #expect(text.text.contains(Fixture.showTitle))
        let json = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory, "--json"])
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        let feeds = object?["feeds"] as? [[String: Any]] ?? []
        let episodes = feeds.first?["episodes"] as? [[String: Any]] ?? []
        let firstRanges = episodes.first { ($0["name"] as? String) == "2026-11-01 Episode 1.mp3" }?["ranges"] as? [[Int]]
        #expect(firstRanges == [[0, 2 * Self.mib]], "exact ranges: \(String(describing: firstRanges))")
        try fixture.unmount()
        let missing = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.directory + "/nothing"])
        #expect(missing.status != 0 && missing.stderr.contains("there is no cache"))
    }

    @Test func randomReadsAtFiftyOffsetsReturnTheOriginsBytes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 24 * Self.mib + 123
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.originPath(0)))
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let block = 4096
            let offset = Int.random(in: 0..<(size / block), using: &generator)
            let got = try Harness.run(
                "dd", ["if=\(fixture.path(0))", "bs=\(block)", "skip=\(offset)", "count=1", "status=none"])
            #expect(got.status == 0)
            let start = offset * block
            let expected = original[start..<min(size, start + block)]
            #expect(got.stdout == expected, "bytes at \(start)")
        }
        try fixture.unmount()
    }

    @Test func remountFetchesOnlyTheRest() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 16 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        try Harness.sh("dd if='\(fixture.path(0))' bs=1M count=1 status=none > /dev/null")
        try fixture.unmount()
        try fixture.origin.reset()
        try fixture.mount()
        #expect(try fixture.hashOfCopy() == fixture.originHash())
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        #expect(sent <= Int64(size - Self.mib), "after remount the origin sent \(sent) bytes")
        try fixture.unmount()
    }

    @Test func readAheadNeverFetchesACachedIslandAgain() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 48 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        // Cache 256 KiB in the middle of where read-ahead windows will run.
        try Harness.sh(
            "dd if='\(fixture.path(0))' of=/dev/null bs=256k count=1 skip=120 iflag=direct status=none")
        try fixture.unmount()
        let island = try fixture.origin.bytesSent("ep1.mp3")
        try fixture.origin.reset()
        try fixture.mount()
        #expect(try fixture.hashOfCopy() == fixture.originHash())
        // Every byte crosses the network once: the second mount fetched
        // exactly what the first did not.
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        #expect(sent + island == Int64(size), "first mount \(island), second \(sent), size \(size)")
        try fixture.unmount()
    }

    @Test func offlineRemountServesCachedEpisodesAndFailsUncachedOnes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [5 * Self.mib, 3 * Self.mib]))
        try fixture.mount()
        try Harness.sh("cat '\(fixture.path(0))' > /dev/null")
        try fixture.unmount()
        fixture.origin.stop()
        try fixture.mount()
        let listing = try Harness.sh("ls '\(fixture.mountpoint)/\(Fixture.showTitle)'")
        #expect(listing.contains("2026-11-02 Episode 2.mp3"))
        #expect(try fixture.hashOfCopy(0, timeout: 30) == fixture.originHash())
        // A hang is a failure too: Harness.run kills cat after its timeout
        // and throws.
        let started = Date()
        let uncached = try Harness.run("cat", [fixture.path(1)], timeout: 60)
        #expect(uncached.status != 0)
        #expect(uncached.stderr.contains("Input/output error"), "got: \(uncached.stderr)")
        // Whatever cat got before the error is the origin's bytes, never
        // zeros standing in for missing ones.
        #expect(
            fixture.episodes[1].data.starts(with: uncached.stdout),
            "the \(uncached.stdout.count) bytes read before the error are the episode's")
        print("an uncached read offline failed after \(Date().timeIntervalSince(started)) s")
        try fixture.unmount()
    }

    /// The kernel sizes its reads of a file read in order by the mount's
    /// read-ahead, and lowers that to what the daemon answers to its hello:
    /// podfs must answer with its own, else reads stay at 128 KiB. The
    /// default is 128 KiB (what a library scan costs, docs/DESIGN.md "Who
    /// reads"); larger than a splice pipe can hold, it is lowered (with a
    /// notice).
    @Test(.needs(getuid() == 0 ? nil : "the mount's read-ahead is root's to set"))
    func theKernelKeepsTheReadAheadAndReadsInLargeRequests() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [24 * Self.mib]))
        func readAheadKiB() throws -> String {
            let device = try Harness.sh("mountpoint -d '\(fixture.mountpoint)'").trimmingCharacters(in: .whitespacesAndNewlines)
            return try String(contentsOfFile: "/sys/class/bdi/\(device)/read_ahead_kb", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try fixture.mount()
        // After the mount answered requests (its hello came first).
        _ = try Harness.sh("ls '\(fixture.mountpoint)'")
        #expect(try readAheadKiB() == "128", "the default")
        try fixture.unmount()

        try fixture.mount(extra: ["-o", "log_level=debug", "-o", "readahead_kb=768"])
        _ = try Harness.sh("ls '\(fixture.mountpoint)'")
        #expect(try readAheadKiB() == "768")
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=1M status=none")
        let sizes = fixture.log().split(separator: "\n").filter { $0.contains("fetching") }.compactMap { line in
            line.range(of: "read.size=").map { Int(line[$0.upperBound...].prefix { $0.isNumber }) ?? 0 }
        }
        #expect(sizes.contains { $0 > 128 * 1024 && $0 <= 768 * 1024 }, "read sizes that started fetches: \(sizes)")
        try fixture.unmount()

        let pipeMax = Int(try String(contentsOfFile: "/proc/sys/fs/pipe-max-size", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1_048_576
        let limit = (pipeMax - 16 * 1024) / 1024
        let asked = min(limit + 1024, 65_536)  // the option's own cap
        try fixture.mount(extra: ["-o", "readahead_kb=\(asked)"])
        _ = try Harness.sh("ls '\(fixture.mountpoint)'")
        #expect(try readAheadKiB() == "\(min(asked, limit))")
        if asked > limit { #expect(fixture.log().contains("readahead_kb=\(asked) lowered to \(limit)")) }
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        try fixture.unmount()
    }

    @Test func anUncachedEpisodeOpensWithoutWaitingForTheOrigin() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        var episodes = Fixture.episodes(sizes: [300_001, 50_000])
        episodes[0].feedLength = 5_000  // the feed's claim is wrong
        try fixture.publish(episodes)
        try fixture.mount()
        // Before an open, `stat` shows the claim, and the kernel may keep it:
        // the open must drop it before the first read, or that read would
        // end at 5,000 bytes.
        let claimed = try Harness.sh("ls -l '\(fixture.path(0))' >/dev/null; stat -c %s '\(fixture.path(0))'")
        #expect(claimed.trimmingCharacters(in: .whitespacesAndNewlines) == "5000")
        // The origin now holds every request before answering, until the
        // script has opened both files and seen that no answer was sent:
        // an open that waited for the origin would never return.
        try fixture.origin.configure(
            #"{"hold_head": {"path": "*", "seconds": 120}, "status": {"/ep2.mp3": {"code": 404}}}"#)
        let script = """
            import json, os, sys, time, urllib.request
            path, missing, copy, base = sys.argv[1:5]
            def stats():
                with urllib.request.urlopen(base + "/_origin/stats") as r:
                    return json.load(r)
            def answered(name):
                return len(stats()["paths"].get(name, {}).get("statuses", []))
            t0 = time.monotonic(); fd = os.open(path, os.O_RDONLY); opened = time.monotonic() - t0
            t0 = time.monotonic(); fd404 = os.open(missing, os.O_RDONLY); opened404 = time.monotonic() - t0
            before = {"ep1": answered("/ep1.mp3"), "ep2": answered("/ep2.mp3")}
            # Answer from now on: clear the hold, then let the held requests go.
            urllib.request.urlopen(urllib.request.Request(
                base + "/_origin/config", data=b'{"hold_head": null}', method="POST")).read()
            urllib.request.urlopen(urllib.request.Request(base + "/_origin/release", data=b"", method="POST")).read()
            size = os.fstat(fd).st_size
            data = b""
            while True:
                piece = os.read(fd, 1 << 20)
                if not piece: break
                data += piece
            os.close(fd)
            try:
                os.read(fd404, 4096); failed = ""
            except OSError as error:
                failed = error.strerror
            print(json.dumps({"answeredBeforeOpens": before, "size": size, "read": len(data),
                              "failed": failed, "opened": opened, "opened404": opened404}))
            open(copy, "wb").write(data)
            """
        let copy = fixture.directory + "/copy"
        let run = try Harness.run(
            "python3", ["-c", script, fixture.path(0), fixture.path(1), copy, fixture.origin.base], timeout: 120)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(run.text.utf8)) as? [String: Any] ?? [:]
        let before = result["answeredBeforeOpens"] as? [String: Int]
        #expect(before == ["ep1": 0, "ep2": 0], "both opens returned before the origin answered anything: \(result)")
        #expect(result["size"] as? Int == 300_001, "fstat after the open shows the origin's size: \(result)")
        #expect(result["read"] as? Int == 300_001)
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)))
        #expect(result["failed"] as? String == "Input/output error", "a missing episode fails its read: \(result)")
        print("opens answered without the origin in \(result["opened"] ?? "?") and \(result["opened404"] ?? "?") s")
        #expect(fixture.log().contains("HTTP 404"), "the log says why")
        try fixture.unmount()
    }


    @Test func wrongFeedLengthsShowTheTrueSizeAfterOpen() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        var episodes = Fixture.episodes(sizes: [700_001, 1_234_567])
        episodes[0].feedLength = 1
        episodes[1].feedLength = 0
        try fixture.publish(episodes)
        try fixture.mount()
        for index in 0..<2 {
            let path = fixture.path(index)
            let size = episodes[index].data.count
            // Listed first: the kernel keeps the claimed size until the open.
            _ = try Harness.sh("ls -l \"$(dirname '\(path)')\" >/dev/null")
            // stat while the file is open (exec 3<): the size is the origin's.
            let statSize = try Harness.sh("exec 3<'\(path)'; stat -c %s '\(path)'; exec 3<&-")
            #expect(statSize.trimmingCharacters(in: .whitespacesAndNewlines) == String(size))
            let count = try Harness.sh("cat '\(path)' | wc -c").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(count == String(size))
            let copy = fixture.directory + "/copy\(index)"
            try Harness.sh("cat '\(path)' > '\(copy)'")
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)))
            let closedSize = try Harness.sh("stat -c %s '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(closedSize == String(size), "the true size stays after the file is closed")
        }
        try fixture.unmount()
    }
}
