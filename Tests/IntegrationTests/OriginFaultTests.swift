import Foundation
import Testing

/// The origin answers with errors, loops, wrong framing or silence: each read
/// ends within a bounded time, with exactly the origin's bytes or EIO, after a
/// bounded number of requests, and the daemon keeps serving.
@Suite(.serialized, .needsRoot)
struct OriginFaultTests {
    private static let mib = 1024 * 1024
    /// The most requests a read that cannot succeed may cost: the reader's
    /// attempts times curl's redirect limit, with room to spare.
    private static let requestBound = 80

    // MARK: - Helpers

    /// Reads the first 256 KiB with O_DIRECT (podfs, not the page cache, answers).
    private func readStart(_ fixture: Fixture, _ index: Int = 0) throws -> Harness.Output {
        try Harness.run(
            "dd", ["if=\(fixture.path(index))", "of=/dev/null", "bs=64k", "count=4", "iflag=direct", "status=none"],
            timeout: 90)
    }

    /// Expects the read to fail with EIO, the origin to have seen at least
    /// one and at most `bound` requests for the path, and the daemon alive.
    private func expectEIO(_ fixture: Fixture, path: String = "ep1.mp3", bound: Int = requestBound) throws {
        let output = try readStart(fixture)
        #expect(output.status != 0, "the read succeeded")
        #expect(output.stderr.contains("Input/output error"), "\(output.stderr)")
        let requests = try fixture.origin.requests(path)
        print("OriginFaultTests: EIO after \(requests) request(s) for \(path)")
        #expect(requests >= 1 && requests <= bound, "\(requests) requests for \(path)")
        #expect(Harness.isAlive(try #require(fixture.daemonPID)), "the daemon is still running")
    }

    /// Copies the whole episode through the mount and compares it.
    private func expectExactCopy(_ fixture: Fixture, _ index: Int = 0) throws {
        #expect(try fixture.hashOfCopy(index, timeout: 120) == fixture.originHash(index))
    }

    // MARK: - Final answers

    @Test(arguments: [404, 410])
    func aMissingEpisodeIsEIOAfterFewRequests(code: Int) throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": \#(code)}}}"#)
        try fixture.origin.reset()
        try expectEIO(fixture, bound: 4)
        // Once the origin has the file again, it is served.
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    @Test func a416WithoutALengthIsEIO() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 416}}}"#)
        try fixture.origin.reset()
        try expectEIO(fixture)
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    @Test func aRedirectLoopIsEIO() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.origin.configure(#"{"redirects": {"/ep1.mp3": "/loop/a", "/loop/a": "/loop/b", "/loop/b": "/loop/a"}}"#)
        try fixture.mount()
        try fixture.origin.reset()
        try expectEIO(fixture, bound: 1)
        let hops = try fixture.origin.requests("loop/a") + fixture.origin.requests("loop/b")
        #expect(hops <= Self.requestBound, "\(hops) requests went round the loop")
        try fixture.unmount()
    }

    @Test(arguments: ["ftp://127.0.0.1/ep1.mp3", "file:///etc/passwd"])
    func aRedirectToAnotherSchemeIsEIO(target: String) throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.origin.configure(#"{"redirects": {"/ep1.mp3": "\#(target)"}}"#)
        try fixture.mount()
        try fixture.origin.reset()
        try expectEIO(fixture, bound: 8)
        try fixture.unmount()
    }

    // MARK: - Busy origins

    @Test func a500WithRetryAfterIsRetried() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib]))
        try fixture.mount()
        try fixture.origin.reset()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 500, "count": 2, "retry_after": 2}}}"#)
        try expectExactCopy(fixture)
        let statuses = try fixture.origin.statuses("ep1.mp3")
        #expect(statuses.prefix(2) == [500, 500] && statuses.count >= 3, "\(statuses)")
        // Each retry waited as long as the origin asked (podfs's own
        // backoff alone would have asked again after 0.2 and 0.4 s).
        let times = try fixture.origin.statusTimes("ep1.mp3")
        try #require(times.count >= 3)
        #expect(times[1] - times[0] >= 1.9 && times[2] - times[1] >= 1.9, "\(times)")
        try fixture.unmount()
    }

    @Test func aRetryAfterGivenAsADateIsHonoured() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.reset()
        // The origin writes the date when it answers: 3 s after that.
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 503, "count": 1, "retry_after_in": 3}}}"#)
        try expectExactCopy(fixture)
        let times = try fixture.origin.statusTimes("ep1.mp3")
        try #require(times.count >= 2)
        // The date has whole seconds: more than 2 of the 3 remain. A lower
        // bound only: a slow machine waits longer, never shorter.
        #expect(times[1] - times[0] >= 1.5, "\(times)")
        print("a Retry-After date 3 s ahead was waited for \(times[1] - times[0]) s")
        try fixture.unmount()
    }

    @Test func aRetryAfterLongerThanAReadWaitsIsEIOAtOnce() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 503, "retry_after": 3600}}}"#)
        try fixture.origin.reset()
        // One request, no retry: the origin asked for an hour's peace.
        try expectEIO(fixture, bound: 1)
        #expect(fixture.log().contains("asks to be asked again in 3600 s"), "the log says why")
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    @Test func aBusyFeedSaysWhenToComeBack() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        try fixture.origin.configure(#"{"status": {"/feed.xml": {"code": 503, "retry_after": 120}}}"#)
        let output = try Harness.run(
            Harness.podfs,
            ["mount", "--cache-dir", fixture.cacheDirectory, "\(fixture.origin.base)/feed.xml", fixture.mountpoint],
            timeout: 60)
        if let pid = Fixture.daemonPID(in: output.text) {
            fixture.adopt(daemonPID: pid)
        }
        #expect(output.status != 0, "a mount with no usable feed fails")
        #expect(output.stderr.contains("HTTP 503") && output.stderr.contains("asks to be asked again in 120 s"),
                "\(output.stderr)")
    }

    @Test func anOriginThatStaysBrokenGivesEIO() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"status": {"/ep1.mp3": {"code": 503, "retry_after": 1}}}"#)
        try fixture.origin.reset()
        try expectEIO(fixture, bound: 20)
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    // MARK: - Wrong framing and silence

    @Test func aBodyShorterThanItsContentRangeIsResumed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [6 * Self.mib + 11]))
        try fixture.mount()
        try fixture.origin.configure(#"{"length_mismatch": {"path": "/ep1.mp3", "delta": -100000, "count": 3}}"#)
        try expectExactCopy(fixture)
        #expect(try fixture.origin.usesLeft("length_mismatch") == 0, "every short body was sent")
        try fixture.unmount()
    }

    /// A host that caps every answer at 200,000 bytes, with an honest
    /// Content-Range: `O_DIRECT` reads of 1 MiB wait for bytes past each
    /// answer's end, and get them from a request for the rest, asked at
    /// once; each byte crosses once.
    @Test func aHostThatCapsItsAnswersIsAskedForTheRest() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3 * Self.mib + 11
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        try fixture.origin.configure(#"{"range_cap": {"path": "/ep1.mp3", "bytes": 200000}}"#)
        try fixture.origin.reset()
        let copy = fixture.directory + "/copy"
        let read = try Harness.run(
            "sh", ["-c", "dd if='\(fixture.path(0))' iflag=direct bs=1M status=none > '\(copy)'"], timeout: 120)
        #expect(read.status == 0, "O_DIRECT reads past a capped answer: \(read.stderr)")
        #expect(try Harness.sha256(copy) == fixture.originHash())
        let requests = try fixture.origin.requests("ep1.mp3")
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        print("OriginFaultTests: capped answers: \(requests) requests, \(sent) bytes for \(size)")
        #expect(requests >= size / 200_000, "every answer was capped: \(requests) requests")
        #expect(Double(sent) <= Double(size) * 1.02, "\(sent) bytes sent for \(size)")
        try fixture.unmount()
    }

    /// A host whose Content-Range starts a byte later than the bytes it
    /// sends (a lying host): none of its bytes is cached, the read fails
    /// with the reason in the log, and once the host is honest the copy is
    /// exact (no wrong byte was kept).
    @Test func anAnswerForAnotherRangeKeepsNoByte() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib + 3]))
        try fixture.mount()
        try fixture.origin.configure(#"{"range_shift": {"path": "/ep1.mp3", "by": 1}}"#)
        try fixture.origin.reset()
        try expectEIO(fixture, bound: 4)
        #expect(fixture.log().contains("is not the range asked"), "\(fixture.log().suffix(2000))")
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    @Test func aBodyLongerThanItsContentRangeIsCutToTheRange() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib + 11
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        try fixture.origin.configure(#"{"length_mismatch": {"path": "/ep1.mp3", "delta": 70000, "count": 4}}"#)
        // Reads in the middle first: bytes past a range must not land on
        // (or be marked present for) what follows it.
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.originPath(0)))
        for offset in [2 * Self.mib, 4 * Self.mib + 5, 100] {
            let got = try Harness.run(
                "dd", ["if=\(fixture.path(0))", "bs=4096", "skip=\(offset)", "count=8192", "status=none",
                       "iflag=skip_bytes,count_bytes,direct"], timeout: 60)
            #expect(got.status == 0, "\(got.stderr)")
            #expect(got.stdout == original[offset..<(offset + 8192)], "bytes at \(offset)")
        }
        try expectExactCopy(fixture)
        #expect(try fixture.origin.usesLeft("length_mismatch") < 4, "a long body was sent")
        try fixture.unmount()
    }

    @Test func anEndlessBodyIsEIOAndHungUpOn() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib]))
        try fixture.mount()
        try fixture.origin.configure(#"{"endless": ["/ep1.mp3"]}"#)
        try fixture.origin.reset()
        try expectEIO(fixture)
        // podfs hung up: every endless response the origin began has ended
        // (it ends only when the client closes the connection), by the
        // origin's own records.
        #expect(try fixture.origin.bytesSent("ep1.mp3") > 0, "an endless body was sent")
        let hungUp = Harness.eventually(60) {
            let requests = (try? fixture.origin.requests("ep1.mp3")) ?? -1
            return requests >= 1 && (try? fixture.origin.finished("ep1.mp3").count) == requests
        }
        let (requests, ended) = (try fixture.origin.requests("ep1.mp3"), try fixture.origin.finished("ep1.mp3").count)
        #expect(hungUp, "an endless body is still being read: \(requests) requests, \(ended) ended")
        try fixture.origin.clearFaults()
        try expectExactCopy(fixture)
        try fixture.unmount()
    }

    @Test func aStalledConnectionTimesOutAndIsResumed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib]))
        // The low-speed timeout (30 s) shortened to 2 s for the test.
        try fixture.mount(launcher: ["env", "PODFS_LOW_SPEED_TIME=2"])
        try fixture.origin.configure(
            #"{"stall": {"path": "/ep1.mp3", "after_bytes": 100000, "seconds": 120, "count": 1}}"#)
        try expectExactCopy(fixture)
        #expect(try fixture.origin.usesLeft("stall") == 0, "the stall happened")
        #expect(try fixture.origin.requests("ep1.mp3") >= 2, "the stalled request was given up and resumed")
        try fixture.unmount()
    }
}
