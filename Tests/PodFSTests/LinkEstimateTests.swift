@testable import PodFS
@testable import ReadRules
import Testing

/// The read-ahead a sequential reader gets from what the link showed.
struct LinkEstimateTests {
    private let bounds: ClosedRange<Int64> = 256 * 1024...16 * 1024 * 1024

    @Test func nothingMeasuredGivesNoOpinion() {
        var link = LinkEstimate()
        #expect(link.readAhead(within: bounds) == nil)
        link.observe(latency: 0.02)
        #expect(link.readAhead(within: bounds) == nil, "a round trip alone does not tell the bytes in flight")
    }

    @Test func aFarFastOriginGetsTheLargestWindow() {
        var link = LinkEstimate()
        link.observe(latency: 0.02)
        link.observe(bytes: 16 << 20, in: 0.016)  // ~1 GB/s
        #expect(link.readAhead(within: bounds) == bounds.upperBound)
    }

    @Test func aSlowLinkKeepsTwiceItsBandwidthDelayProduct() {
        var link = LinkEstimate()
        link.observe(latency: 0.03)
        link.observe(bytes: 1 << 20, in: 0.1)  // ~10 MB/s
        let exact = Int64(2 * Double(1 << 20) / 0.1 * 0.03)
        let expected = (exact / 65536 + 1) * 65536
        #expect(link.readAhead(within: bounds) == expected, "rounded up to a whole 64 KiB")
    }

    @Test func aWindowOutrunsTheLinkOnlyWhenItHoldsLessThanTwiceItsBytesInFlight() {
        var link = LinkEstimate()
        #expect(!link.outruns(window: 16 << 20), "nothing measured")
        link.observe(latency: 0.02)
        link.observe(bytes: 16 << 20, in: 0.016)  // ~1 GB/s at 20 ms: ~21 MB in flight
        #expect(link.outruns(window: 16 << 20))
        #expect(!link.outruns(window: 64 << 20))
        var near = LinkEstimate()
        near.observe(latency: 0.0003)
        near.observe(bytes: 16 << 20, in: 0.008)  // ~2 GB/s on loopback: ~0.6 MB in flight
        #expect(!near.outruns(window: 16 << 20))
    }

    /// Beyond the usual largest window only the shortest round trip counts:
    /// a near origin whose heads queued behind a busy moment is not far.
    @Test func onlyAFarOriginGrowsPastTheUsualLargestWindow() {
        let far: ClosedRange<Int64> = 256 * 1024...64 * 1024 * 1024
        var link = LinkEstimate()
        #expect(link.readAheadAtShortestLatency(within: far) == nil)
        link.observe(latency: 0.02)
        link.observe(latency: 0.03)
        link.observe(bytes: 16 << 20, in: 0.016)  // ~1 GB/s
        let atTwenty = (Int64(2 * Double(16 << 20) / 0.016 * 0.02) + 65535) / 65536 * 65536
        #expect(link.readAheadAtShortestLatency(within: far) == atTwenty, "twice the bytes in flight at 20 ms")
        var busy = LinkEstimate()
        busy.observe(latency: 0.0002)  // loopback, idle
        busy.observe(latency: 0.009)  // then a head that queued
        busy.observe(bytes: 16 << 20, in: 0.011)  // ~1.5 GB/s
        #expect(busy.readAhead(within: far)! > 8 << 20, "the smoothed round trip makes it look far")
        #expect(busy.readAheadAtShortestLatency(within: far)! < 1 << 20, "the shortest does not")
    }

    @Test func aNearOriginStaysAtTheSmallestWindow() {
        var link = LinkEstimate()
        link.observe(latency: 0.0001)  // loopback
        link.observe(bytes: 256 * 1024, in: 0.0005)  // ~0.5 GB/s: 0.1 MB in flight
        #expect(link.readAhead(within: bounds) == bounds.lowerBound)
    }

    @Test func shortBodiesAndNonsenseAreIgnored() {
        var link = LinkEstimate()
        link.observe(latency: -1)
        link.observe(latency: .nan)
        #expect(link.latency == nil)
        link.observe(bytes: 4096, in: 0.001)
        link.observe(bytes: 1 << 20, in: 0)
        #expect(link.throughput == nil)
    }

    @Test func oneOddResponseMovesTheEstimateHalfway() {
        var link = LinkEstimate()
        link.observe(latency: 0.01)
        link.observe(latency: 0.03)
        #expect(link.latency == 0.02)
    }

    @Test func onlyAnOriginThatAnswersWithinAMillisecondIsNear() {
        var link = LinkEstimate()
        #expect(!link.isNear, "nothing measured")
        link.observe(latency: 0.0003)
        #expect(link.isNear)
        var far = LinkEstimate()
        far.observe(latency: 0.02)
        #expect(!far.isNear)
    }
}
