import Foundation
import Testing

/// Most shows' enclosures go through a tracking prefix (an analytics host
/// that redirects) to a CDN of their own. What the reader learns of the
/// link is the CDN's: the bodies it sends and the round trips of requests
/// sent to it straight, not the redirects' (`LinkEstimates`).
@Suite(.serialized, .needsRoot)
struct TrackingPrefixTests {
    private static let mib = 1024 * 1024

    @Test func aShowBehindATrackingPrefixIsMeasuredAtItsCDN() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let cdn = try TestOrigin(root: fixture.directory + "/cdn/origin")
        defer { cdn.stop() }
        try fixture.publish(Fixture.episodes(sizes: [8 * Self.mib]))
        try cdn.put("ep1.mp3", fixture.episodes[0].data)
        // A far CDN: every request to it waits 40 ms; the prefix is near.
        try cdn.configure(#"{"latency_ms": 40}"#)
        try fixture.origin.configure(#"{"redirects": {"/ep1.mp3": "\#(cdn.base)/ep1.mp3"}}"#)
        try fixture.mount(extra: ["--log-level", "trace"])
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == fixture.episodes[0].data, "the episode's bytes")
        try fixture.unmount()

        // The first request went through the prefix, the later ones to the
        // link it pinned.
        let throughPrefix = try fixture.origin.requests("ep1.mp3")
        let atCDN = try cdn.requests("ep1.mp3")
        #expect(throughPrefix >= 1 && atCDN > throughPrefix, "\(throughPrefix) through the prefix, \(atCDN) at the CDN")

        let prefixHost = String(fixture.origin.base.dropFirst("http://".count))
        let cdnHost = String(cdn.base.dropFirst("http://".count))
        let lines = fixture.log().split(separator: "\n").filter { $0.contains("link estimate") }
        try #require(lines.count >= 2, "a line for each response body; the log:\n\(fixture.log().suffix(3000))")
        for line in lines {
            #expect(line.contains(" host=\(cdnHost) ") && line.contains(" feed.host=\(prefixHost) "), "\(line)")
        }
        // The probe went through the redirect: its round trip is not the
        // CDN's own. Its 256 KiB body ends long before the next request's
        // head, which waits 40 ms at the CDN, so its line comes first. Later
        // requests went to the CDN straight, 40 ms each.
        #expect(Self.value("latency.seconds", in: lines[0]) == -1, "\(lines[0])")
        #expect(Self.value("feed.latency.seconds", in: lines[0]).map { $0 >= 0.04 } == true, "\(lines[0])")
        let own = lines.dropFirst().compactMap { Self.value("latency.seconds", in: $0) }
        #expect(!own.isEmpty && own.allSatisfy { $0 >= 0.04 }, "the CDN's own round trips: \(own)")
        #expect(lines.allSatisfy { (Self.value("throughput", in: $0) ?? -1) > 0 }, "every body told the CDN's rate")
    }

    /// The sizing side. The show's first episode is served by the
    /// prefix's host itself, which so answers within a few milliseconds;
    /// its second redirects to a CDN 250 ms away. Sized by the feed host's
    /// estimate (shortest round trip: milliseconds), a sequential reader's
    /// windows at the CDN stop at the usual largest, 16 MiB; sized by the
    /// CDN's own, a far, fast link, the rest of the file goes in one.
    @Test func aFarCDNBehindANearPrefixIsReadAsAFarLink() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let cdn = try TestOrigin(root: fixture.directory + "/cdn/origin")
        defer { cdn.stop() }
        try fixture.publish(Fixture.episodes(sizes: [2 * Self.mib, 40 * Self.mib]))
        try cdn.put("ep2.mp3", fixture.episodes[1].data)
        try cdn.configure(#"{"latency_ms": 250}"#)
        try fixture.origin.configure(#"{"redirects": {"/ep2.mp3": "\#(cdn.base)/ep2.mp3"}}"#)
        try fixture.mount()
        for index in 0..<2 {
            let copy = fixture.directory + "/copy\(index)"
            try Harness.sh("cat '\(fixture.path(index))' > '\(copy)'")
            #expect(FileManager.default.contents(atPath: copy) == fixture.episodes[index].data, "episode \(index + 1)")
        }
        try fixture.unmount()
        #expect(try fixture.origin.requests("ep1.mp3") >= 1, "the first episode came from the prefix's host")
        let ranges = try cdn.ranges("ep2.mp3")
        let lengths = ranges.compactMap { range -> Int? in
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 ? bounds[1] - bounds[0] + 1 : nil
        }
        #expect((lengths.max() ?? 0) > 16 * Self.mib, "a far link's window at the CDN: \(ranges)")
    }

    /// A number the log line gives as `name=value`.
    private static func value(_ name: String, in line: Substring) -> Double? {
        guard let range = line.range(of: " \(name)=") else { return nil }
        return Double(line[range.upperBound...].prefix { !$0.isWhitespace })
    }
}
