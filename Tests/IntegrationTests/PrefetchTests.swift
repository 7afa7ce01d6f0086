import Foundation
import Testing

/// `podfs prefetch`: resuming after Ctrl-C, progress on a terminal and in a
/// pipe, and reading through a mount that uses the same cache.
@Suite(.serialized, .needsRoot)
struct PrefetchTests {
    private static let mib = 1024 * 1024

    /// Episode URLs and cached bytes from `podfs status --json`.
    private static func cached(_ fixture: Fixture) throws -> [String: Int64] {
        try fixture.cachedBytes()
    }

    /// Private prefetch mounts of this test run (under its TMPDIR; other
    /// runs on the machine have their own).
    private static func prefetchMounts() -> [String] {
        let table = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        // Where prefetch makes them: $XDG_RUNTIME_DIR when set, else TMPDIR.
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? NSTemporaryDirectory()
        let prefix = (base as NSString).standardizingPath + "/podfs-prefetch-"
        return table.split(separator: "\n").filter { $0.contains(" " + prefix) }.map(String.init)
    }

    @Test func ctrlCStopsAndASecondRunFetchesOnlyWhatIsMissing() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 24 * Self.mib
        // Newest first: the small episode 2, then the big episode 1, whose
        // every response pauses 30 s after 6 MiB: the first run is stopped
        // while it waits.
        try fixture.publish(Fixture.episodes(sizes: [size, Self.mib]))
        try fixture.origin.configure(
            #"{"stall": {"path": "/ep1.mp3", "after_bytes": 6291456, "seconds": 30, "count": -1}}"#)
        let out = try TempFile()
        let feed = "\(fixture.origin.base)/feed.xml"
        let first = try Harness.spawn(
            Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, feed],
            stdout: out.handle.fileDescriptor, stderr: out.handle.fileDescriptor)
        var sent: Int64 = 0
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            sent = (try? fixture.origin.bytesSent("ep1.mp3")) ?? 0
            if sent >= 6 * Int64(Self.mib) { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(sent >= 6 * Int64(Self.mib), "the first run reached the stall")
        kill(first, SIGINT)
        var status: Int32 = 0
        _ = waitpid(first, &status, 0)
        let firstText = String(decoding: out.contents(), as: UTF8.self)
        #expect((status >> 8) & 0xff == 130, "exit status 130 after Ctrl-C: \(firstText)")
        #expect(firstText.contains("stopped after") && firstText.contains("run the same command again"), "\(firstText)")
        #expect(Self.prefetchMounts().isEmpty, "the private mount is gone: \(Self.prefetchMounts())")
        let afterFirst = try Self.cached(fixture)
        let cachedBig = afterFirst["\(fixture.origin.base)/ep1.mp3"] ?? 0
        #expect(afterFirst["\(fixture.origin.base)/ep2.mp3"] == Int64(Self.mib), "\(afterFirst)")
        #expect(cachedBig >= 4 * Int64(Self.mib) && cachedBig < Int64(size), "kept \(cachedBig) bytes")

        try fixture.origin.clearFaults()
        try fixture.origin.reset()
        let second = try Harness.run(Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, feed], timeout: 120)
        #expect(second.status == 0, "\(second.text) \(second.stderr)")
        #expect(second.text.contains("done: 2 of 2 episodes cached"), "\(second.text)")
        #expect(Self.prefetchMounts().isEmpty, "the private mount is gone after a full run too")
        let refetched = try fixture.origin.bytesSent("ep1.mp3")
        let missing = Int64(size) - cachedBig
        // Only the missing part (plus at most the open's 1-byte probe and a
        // partial chunk the first run had not committed when stopped).
        #expect(refetched >= missing && refetched <= missing + Int64(Self.mib), "refetched \(refetched) of \(missing) missing")
        #expect(try fixture.origin.bytesSent("ep2.mp3") <= 1, "the complete episode is not fetched again")
        #expect(try Self.cached(fixture)["\(fixture.origin.base)/ep1.mp3"] == Int64(size))
        print("prefetch resume: first run kept \(cachedBig) of \(size) bytes; second run fetched \(refetched) (missing \(missing))")
    }

    /// A feed whose host is slow (its answer held 4 s, past the mount's
    /// 2.5 s budget) is waited for and prefetched; one that fails (a 404)
    /// is named with its error, and the exit status says something was
    /// left out. Neither is blamed on the private mount.
    @Test func aSlowFeedIsWaitedForAndAFailedOneIsNamed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.mib, 2 * Self.mib]))
        try fixture.origin.configure(#"{"hold_head": {"path": "/feed.xml", "seconds": 4}}"#)
        let feed = "\(fixture.origin.base)/feed.xml"
        let missing = "\(fixture.origin.base)/nope.xml"
        let output = try Harness.run(
            Harness.podfs, ["prefetch", "--latest", "1", "--cache-dir", fixture.cacheDirectory, feed, missing],
            timeout: 120)
        let stats = try fixture.origin.stats()
        #expect((stats["holds"] as? NSNumber)?.intValue ?? 0 >= 1, "the feed's answer was held: \(stats)")
        #expect(output.status == 1, "\(output.text) \(output.stderr)")
        #expect(output.text.contains("done: 1 of 1 episodes cached"), "\(output.text) \(output.stderr)")
        #expect(output.stderr.contains("nothing of \(missing) was prefetched") && output.stderr.contains("404"), "\(output.stderr)")
        #expect(!output.stderr.contains("unmount"), "the private mount is not blamed: \(output.stderr)")
        #expect(try Self.cached(fixture)["\(fixture.origin.base)/ep2.mp3"] == Int64(2 * Self.mib))
        #expect(Self.prefetchMounts().isEmpty, "the private mount is gone")

        // Ctrl-C while the feed's answer is held says it stopped, and
        // blames no feed.
        try fixture.origin.configure(#"{"hold_head": {"path": "/feed.xml", "seconds": 30}}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        let out = try TempFile()
        let stopped = try Harness.spawn(
            Harness.podfs, ["prefetch", "--cache-dir", fixture.directory + "/cache2", feed],
            stdout: out.handle.fileDescriptor, stderr: out.handle.fileDescriptor)
        #expect(Harness.eventually { ((try? fixture.origin.held()) ?? 0) >= 1 }, "the feed's answer is held")
        // Past the private mount's 2.5 s wait for its feeds: prefetch waits for the feed.
        Thread.sleep(forTimeInterval: 4)
        kill(stopped, SIGINT)
        var status: Int32 = 0
        _ = waitpid(stopped, &status, 0)
        let text = String(decoding: out.contents(), as: UTF8.self)
        #expect((status >> 8) & 0xff == 130, "\(text)")
        #expect(text.contains("stopped while the feeds were loading") && !text.contains("lists no episode"), "\(text)")
        #expect(Self.prefetchMounts().isEmpty, "the private mount is gone")
    }

    @Test func aTerminalGetsLiveBarsAndAPipeGetsPlainLines() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [8 * Self.mib, 8 * Self.mib]))
        // Responses over 1 MiB pause 0.5 s after it: the bars are drawn.
        try fixture.origin.configure(
            #"{"stall": {"path": "*", "after_bytes": 1048576, "seconds": 0.5, "count": -1}}"#)
        let feed = "\(fixture.origin.base)/feed.xml"
        let command = "'\(Harness.podfs)' prefetch --cache-dir '\(fixture.cacheDirectory)' '\(feed)'"
        let terminal = try Harness.run("script", ["-q", "-e", "-c", command, "/dev/null"], timeout: 120)
        #expect(terminal.status == 0, "\(terminal.text) \(terminal.stderr)")
        let screen = terminal.text
        #expect(screen.contains("\u{1b}[K") && screen.contains("\u{1b}[1A"), "redrawn in place")
        #expect(screen.contains("█") && screen.contains("░") && screen.contains("%"), "a bar per episode")
        #expect(screen.contains("total: episode 1 of 2") && screen.contains("total: episode 2 of 2"), "\(screen)")
        #expect(screen.contains("/s, ETA "), "rate and time left")
        #expect(screen.contains("done    \(Fixture.showTitle)/2026-11-02 Episode 2.mp3"), "\(screen)")

        // Piped: plain lines, nothing drawn; all cached now.
        let piped = try Harness.run(Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, feed])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!piped.text.contains("\u{1b}") && !piped.text.contains("\r"), "\(piped.text)")
        let lines = piped.text.split(separator: "\n")
        #expect(lines.first == "prefetch: 2 episodes, 16.0 MiB, 0 B to fetch", "\(piped.text)")
        #expect(lines.filter { $0.hasPrefix("  done    ") && $0.hasSuffix("(already cached)") }.count == 2, "\(piped.text)")
        #expect(lines.last?.hasPrefix("prefetch: done: 2 of 2 episodes cached, 0 B fetched") == true, "\(piped.text)")
    }

    @Test func aMountedCacheIsFilledThroughItsMountAndLatestPicksTheNewest() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3 * Self.mib
        // The show's cover (dated as its newest file) is no episode of --latest's.
        try fixture.publish(Fixture.episodes(sizes: [size, size, size]), cover: Harness.bytes(count: 5_000, seed: 77))
        let feed = "\(fixture.origin.base)/feed.xml"
        // Mounted in mount.fuse3's form, the cache named only in -o.
        let mounted = try Harness.run(
            Harness.podfs, [feed, fixture.mountpoint, "-o", "cache_dir=\(fixture.cacheDirectory),noauto"], timeout: 60)
        #expect(mounted.status == 0, "\(mounted.stderr)")
        if let pid = Fixture.daemonPID(in: mounted.text) {
            fixture.adopt(daemonPID: pid)
        }
        try fixture.waitUntilListed(.published)
        let output = try Harness.run(
            Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, "--latest", "2", feed], timeout: 120)
        #expect(output.status == 0, "\(output.text) \(output.stderr)")
        #expect(output.text.contains("prefetch: 2 episodes,") && !output.text.contains("cover.jpg"), "\(output.text)")
        #expect(output.stderr.contains("is mounted on \(fixture.mountpoint); prefetching through that mount"), "\(output.stderr)")
        #expect(Self.prefetchMounts().isEmpty, "no second mount")
        #expect(try fixture.origin.bytesSent("ep1.mp3") == 0, "the oldest is left out")
        #expect(try fixture.origin.bytesSent("ep2.mp3") == Int64(size))
        #expect(try fixture.origin.bytesSent("ep3.mp3") == Int64(size))
        // podfs status right after shows them cached (prefetch waited for
        // the mount's commit).
        let cached = try Self.cached(fixture)
        #expect(cached["\(fixture.origin.base)/ep3.mp3"] == Int64(size) && cached["\(fixture.origin.base)/ep2.mp3"] == Int64(size), "\(cached)")
        // The mount serves them from the cache: no new bytes.
        try Harness.sh("cat '\(fixture.path(2))' '\(fixture.path(1))' > /dev/null")
        #expect(try fixture.origin.bytesSent("ep3.mp3") == Int64(size))
        // --since: only what was published since then.
        let since = try Harness.run(
            Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, "--since", "2026-11-03", feed], timeout: 120)
        #expect(since.text.contains("prefetch: 1 episode,"), "\(since.text)")
        // The prefetch leaves the oldest out. Once, under ThreadSanitizer
        // on a loaded machine, the origin had sent the oldest some bytes by
        // here; the likeliest reader is the mount's scan-ahead (the two
        // quick opens of `cat` above, in listing order), which fetches at
        // most a head and a tail, never the file.
        #expect(try fixture.origin.bytesSent("ep1.mp3") <= Int64(Self.mib + 64 * 1024))
        // A feed the mount does not serve is refused with what to do.
        let other = try Harness.run(
            Harness.podfs, ["prefetch", "--cache-dir", fixture.cacheDirectory, "\(fixture.origin.base)/other.xml"])
        #expect(other.status == 1 && other.stderr.contains("is not in the mount on"), "\(other.stderr)")
        try fixture.unmount()
    }
}
