import Foundation
import Testing

/// A far, fast origin (docs/DESIGN.md, "Read-ahead"): once the mount has
/// measured it, an open's probe brings the head as far as a scan reads, so
/// a reader that reads on waits for two requests before its windows, as
/// `curl` waits for a connect and one.
@Suite(.serialized, .needsRoot)
struct FarOriginTests {
    private static let mib = 1024 * 1024

    @Test func aLaterFileOfAFarFastOriginIsProbedAsFarAsAScanReads() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib, 3 * Self.mib]))
        try fixture.mount()
        try fixture.origin.reset()
        // 30 ms a request on loopback's rate: far, and fast enough that
        // twice the bytes in flight hold an episode's head.
        try fixture.origin.configure(#"{"latency_ms": 30}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        // The mount's first open knows nothing of the link: the small probe.
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        let first = try fixture.origin.ranges("ep1.mp3")
        #expect(first.first == "bytes=0-262143", "\(first)")
        // The next one's probe reaches the scan's reach (1 MiB), and the
        // read past it gets the rest in one request.
        #expect(try fixture.hashOfCopy(1) == fixture.originHash(1))
        let later = try fixture.origin.ranges("ep2.mp3")
        #expect(later.first == "bytes=0-1048575", "\(later)")
        #expect(later.count == 2, "the probe and one request for the rest: \(later)")
        #expect(try fixture.origin.bytesSent("ep2.mp3") == Int64(3 * Self.mib), "each byte once")
        try fixture.unmount()
    }
}
