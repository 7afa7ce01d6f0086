import Foundation
import Testing

/// An origin that misbehaves (drops, ignores Range, redirects, fails for a
/// while) and a daemon stopped by a signal: reads still return exactly the
/// origin's bytes, and what was cached survives.
@Suite(.serialized, .needsRoot)
struct FaultTests {
    private static let mib = 1024 * 1024

    /// Every read waits for bytes past the drop point of the response that
    /// serves it (O_DIRECT reads of 1 MiB; the origin closes each of three
    /// responses after 700,000 body bytes), so a drop that was not resumed
    /// fails a read. Resumed means asked again from where it stopped.
    @Test func droppedConnectionsAreResumed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [8 * Self.mib + 5]))
        try fixture.mount()
        try fixture.origin.reset()
        // Only a response longer than 700,000 bytes can be dropped there,
        // and only those use up the count (a shorter probe does not).
        try fixture.origin.configure(#"{"drop": {"path": "/ep1.mp3", "after_bytes": 700000, "count": 3}}"#)
        let copy = fixture.directory + "/copy"
        try Harness.sh("dd if='\(fixture.path(0))' iflag=direct bs=1M status=none > '\(copy)'", timeout: 120)
        #expect(try Harness.sha256(copy) == fixture.originHash())
        #expect(try fixture.origin.drops("ep1.mp3") == 3, "the origin dropped three connections mid-body")
        #expect(try fixture.origin.usesLeft("drop") == 0)
        // After each drop, a request starts exactly where the dropped one stopped.
        let ranges = try fixture.origin.ranges("ep1.mp3")
        let starts = Set(ranges.compactMap(Self.rangeStart))
        let dropped = try fixture.origin.dropped("ep1.mp3")
        #expect(dropped.count == 3, "\(dropped)")
        for drop in dropped {
            let resumedAt = (drop.range.flatMap(Self.rangeStart) ?? 0) + drop.sent
            #expect(starts.contains(resumedAt), "no request resumed at \(resumedAt) after \(drop); ranges: \(ranges)")
        }
        try fixture.unmount()
    }

    /// The first byte of a `bytes=A-B` or `bytes=A-` Range header.
    private static func rangeStart(_ header: String) -> Int? {
        guard header.hasPrefix("bytes=") else { return nil }
        return Int(header.dropFirst(6).prefix { $0.isNumber })
    }

    @Test func anOriginThatIgnoresRangeStillGivesExactBytes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib + 77
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.origin.configure(#"{"ignore_range": ["*"]}"#)
        try fixture.mount()
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.originPath(0)))
        for offset in [5 * Self.mib, 123_456, size - 100] {
            let got = try Harness.run(
                "dd", ["if=\(fixture.path(0))", "bs=1", "skip=\(offset)", "count=100", "status=none",
                       "iflag=skip_bytes,count_bytes", "ibs=4096"], timeout: 60)
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.stdout == original[offset..<min(size, offset + 100)], "bytes at \(offset)")
        }
        #expect(try fixture.hashOfCopy(0, timeout: 120) == fixture.originHash())
        try fixture.unmount()
    }

    @Test func redirectedEnclosuresAreFollowed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let episodes = Fixture.episodes(sizes: [2 * Self.mib + 1])
        try fixture.publish(episodes)
        try fixture.origin.put("cdn/ep1.mp3", episodes[0].data)
        try fixture.origin.configure(#"{"redirects": {"/ep1.mp3": "/cdn/ep1.mp3"}}"#)
        try fixture.mount()
        #expect(try fixture.hashOfCopy(0, timeout: 60) == fixture.originHash())
        #expect(try fixture.origin.bytesSent("cdn/ep1.mp3") >= Int64(episodes[0].data.count))
        try fixture.unmount()
    }

    @Test func anExpiredRedirectTargetIsResolvedAgain() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let episodes = Fixture.episodes(sizes: [4 * Self.mib])
        try fixture.publish(episodes)
        try fixture.origin.put("cdn1/ep1.mp3", episodes[0].data)
        try fixture.origin.put("cdn2/ep1.mp3", episodes[0].data)
        // The same object on another edge: same bytes, same validator (the
        // origin's ETag is size and modification time).
        let root = (fixture.originPath(0) as NSString).deletingLastPathComponent
        try Harness.run("touch", ["-r", root + "/cdn1/ep1.mp3", root + "/cdn2/ep1.mp3"])
        try fixture.origin.configure(#"{"redirects": {"/ep1.mp3": "/cdn1/ep1.mp3"}}"#)
        try fixture.mount()
        // The first read learns (and remembers) the end of the chain.
        try Harness.run(
            "dd", ["if=\(fixture.path(0))", "of=/dev/null", "bs=4096", "count=1", "iflag=direct", "status=none"])
        #expect(try fixture.origin.requests("cdn1/ep1.mp3") >= 1)
        // The signed link expires; the enclosure URL now leads elsewhere.
        try fixture.origin.configure(
            #"{"redirects": {"/ep1.mp3": "/cdn2/ep1.mp3"}, "status": {"/cdn1/ep1.mp3": {"code": 410}}}"#)
        let copy = fixture.directory + "/copy"
        try Harness.sh("dd if='\(fixture.path(0))' of='\(copy)' bs=1M iflag=direct status=none", timeout: 60)
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)))
        #expect(try fixture.origin.bytesSent("cdn2/ep1.mp3") > 0)
        try fixture.unmount()
    }

    @Test func aFewServerErrorsAreRetried() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 503, "count": 2}}}"#)
        #expect(try fixture.hashOfCopy(0, timeout: 60) == fixture.originHash())
        try fixture.unmount()
    }

    @Test func sigtermUnmountsAndKeepsTheCache() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 10 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        try Harness.sh("cat '\(fixture.path(0))' > /dev/null")
        let pid = try #require(fixture.daemonPID)
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(20)
        while Fixture.isMounted(fixture.mountpoint) || Harness.isAlive(pid), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(!Fixture.isMounted(fixture.mountpoint), "SIGTERM unmounts")
        #expect(!Harness.isAlive(pid), "SIGTERM stops the daemon")
        try fixture.origin.reset()
        try fixture.mount()
        #expect(try fixture.hashOfCopy() == fixture.originHash())
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        #expect(sent <= 4096, "after SIGTERM and a remount the origin sent \(sent) bytes for a cached episode")
        try fixture.unmount()
    }
}
