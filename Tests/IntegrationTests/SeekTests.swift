import Foundation
import Testing

/// A listener who seeks far ahead of a running stream (docs/DESIGN.md,
/// "Join or jump"): the read is served by a fetch of its own while the
/// stream is still on its way, the stream yields, and the bytes it gave up
/// are fetched later, each byte once (guarantee 2).
@Suite(.serialized, .needsRoot)
struct SeekTests {
    private static let mib = 1024 * 1024

    @Test func aSeekFarAheadOfARunningStreamIsServedByAFetchOfItsOwn() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 64 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        try fixture.origin.reset()
        // A far origin whose long bodies stop after 1 MiB until released:
        // the read-ahead is still on its way when the listener seeks.
        try fixture.origin.configure(
            #"{"latency_ms": 5, "hold": {"path": "/ep1.mp3", "after_bytes": 1048576, "seconds": 120}}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        // The player starts the episode: 1 MiB read, read-ahead streaming.
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=128k count=8 status=none")
        #expect(Harness.eventually(60) { ((try? fixture.origin.held()) ?? 0) >= 1 }, "the stream was never held")
        // A stream is judged by its own rate since its first byte (`JoinOrJump`):
        // right after it was held, 1 MiB in a few milliseconds still looks
        // fast, and on a loaded machine (a slow round trip measured) the seek
        // could join it and wait for the hold. Held for half a second, its
        // rate is at most 2 MB/s: the seek's own request is sooner whatever
        // the machine.
        Thread.sleep(forTimeInterval: 0.5)
        let streamRanges = try fixture.origin.ranges("ep1.mp3")
        // The seek: halfway into the furthest window, which holds 1 MiB in
        // (at least 1 MiB before the seek).
        let furthest = try #require(streamRanges.compactMap(Self.byteRange).max { $0.lowerBound < $1.lowerBound })
        try #require(furthest.count >= 4 * Self.mib, "the read-ahead runs a window of 4 MiB or more: \(streamRanges)")
        let seek = (furthest.lowerBound + furthest.count / 2) / 65536 * 65536
        let copy = fixture.directory + "/seek"
        let started = Date()
        let read = try Harness.run(
            "dd",
            ["if=\(fixture.path(0))", "of=\(copy)", "bs=64k", "count=1", "skip=\(seek / 65536)", "iflag=direct",
             "status=none"],
            timeout: 60)
        let seconds = Date().timeIntervalSince(started)
        #expect(read.status == 0, "the seek's read failed: \(read.stderr)")
        #expect(try fixture.origin.held() >= 1, "the seek was answered while the stream was still held")
        let afterSeek = try fixture.origin.ranges("ep1.mp3")
        let own = afterSeek.dropFirst(streamRanges.count).filter { Self.byteRange($0)?.lowerBound == seek }
        #expect(own.count == 1, "the seek asked for its own bytes: \(afterSeek)")
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.originPath(0)))
        let seekBytes = try Data(contentsOf: URL(fileURLWithPath: copy))
        #expect(seekBytes == original.subdata(in: seek..<seek + 65536), "the seek read the origin's bytes")
        // The stream goes on; what it gave up is filled once nothing else
        // is on its way.
        try fixture.origin.clearFaults()
        try fixture.origin.release()
        // Filled: every byte any request asked for is cached.
        var asked = 0
        let filled = Harness.eventually(120) {
            asked = Self.union((try? fixture.origin.ranges("ep1.mp3")) ?? [])
            let cached = try? Harness.run("getfattr", ["--only-values", "-n", "user.podfs.cached_bytes", fixture.path(0)])
            return cached?.text.trimmingCharacters(in: .whitespacesAndNewlines) == "\(asked)"
                && (try? fixture.origin.held()) == 0
        }
        #expect(filled, "the gap the stream left was never filled")
        let ranges = try fixture.origin.ranges("ep1.mp3")
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        print(
            "seek ahead of a held stream: read in \(String(format: "%.3f", seconds)) s; requests \(ranges); "
                + "\(sent) bytes sent for \(asked) asked")
        // Each byte once: what the stream sent past its cut before podfs
        // hung up is the only slack.
        #expect(sent <= Int64(asked + Self.slack), "origin sent \(sent) bytes for \(asked) distinct bytes asked")
        // Requested after the stream (the fill may start before the release:
        // the stopped stream ends at once, and the seek's fetch soon after).
        let fills = ranges.dropFirst(streamRanges.count).compactMap(Self.byteRange).filter { $0.lowerBound != seek }
        #expect(fills.contains { $0.upperBound == seek }, "the gap before the seek was filled after it: \(ranges)")
        #expect(fills.contains { $0.lowerBound > seek && $0.upperBound == furthest.upperBound }, "and after it: \(ranges)")
        #expect(try fixture.hashOfCopy() == fixture.originHash())
        let total = try fixture.origin.bytesSent("ep1.mp3")
        #expect(total <= Int64(size + Self.slack), "origin sent \(total) bytes for a \(size)-byte file")
        try fixture.unmount()
    }

    /// What a stopped transfer may have sent past its cut: the origin's
    /// last write before it saw the connection close.
    private static let slack = 512 * 1024

    /// How many bytes the `bytes=A-B` headers ask for, each counted once.
    private static func union(_ headers: [String]) -> Int {
        var merged: [Range<Int>] = []
        for range in headers.compactMap(byteRange).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged.reduce(0) { $0 + $1.count }
    }

    /// The bytes a `bytes=A-B` Range header asks for (`A..<B+1`).
    private static func byteRange(_ header: String) -> Range<Int>? {
        guard header.hasPrefix("bytes=") else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let lower = Int(parts[0]), let upper = Int(parts[1]), upper >= lower else { return nil }
        return lower..<(upper + 1)
    }
}
