import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A far, fast origin (docs/DESIGN.md, "Read-ahead"): a link whose bytes in
/// flight hold an episode's head (`ReadTuning.farAndFast`) is read the way
/// `curl` reads it, a round trip for the head and one for the rest,
/// while a home line keeps the head's steps and its one window at a time.
@Suite struct FarLinkTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024
    private let length: Int64 = 200 * 1024 * 1024

    /// 20 ms away at 1 GB/s: 40 MB in flight, twice over.
    private var farAndFast: LinkEstimate {
        var link = LinkEstimate()
        link.observe(latency: 0.02)
        link.observe(bytes: 1_000_000_000, in: 1)
        return link
    }

    /// 50 ms away each way at 2 MB/s.
    private var homeLine: LinkEstimate {
        var link = LinkEstimate()
        link.observe(latency: 0.1)
        link.observe(bytes: 2_000_000, in: 1)
        return link
    }

    /// A fresh file whose open's probe brought the first 256 KiB (the
    /// mount's first response), read in order to 1 MiB on `link`: one
    /// fetch to the scan's reach, whose head agrees (the second response).
    private func readTheHead(link: LinkEstimate) throws -> ReadBench {
        var bench = ReadBench(length: length, present: [0..<256 * kib], agreed: false)
        bench.tuning = ReadTuning()
        bench.link = link
        var fetched: [Range<Int64>] = []
        for step in Int64(0)..<8 {
            fetched += ReadBench.fetched(bench.read(at: step * 128 * kib))
        }
        #expect(fetched == [256 * kib..<mib], "\(fetched)")
        let id = try #require(bench.state.fetches.first { $0.value.cursor == 256 * kib }?.key)
        bench.head(id, 256 * kib..<mib)
        bench.land(256 * kib..<mib)
        return bench
    }

    @Test func theLinkDecidesWhatIsFarAndFast() {
        let tuning = ReadTuning()
        #expect(ReadPlan.isFarAndFast(link: farAndFast, tuning: tuning))
        #expect(!ReadPlan.isFarAndFast(link: homeLine, tuning: tuning))
        #expect(!ReadPlan.isFarAndFast(link: LinkEstimate(), tuning: tuning), "nothing measured yet")
        var loopback = LinkEstimate()
        loopback.observe(latency: 0.0004)
        loopback.observe(bytes: 1_200_000_000, in: 1)
        #expect(!ReadPlan.isFarAndFast(link: loopback, tuning: tuning), "loopback holds about 1 MiB")
    }

    @Test func aListenerPastTheScanReachGetsTheLargestWindowAtOnce() throws {
        var bench = try readTheHead(link: farAndFast)
        // The first read past the scan's reach: the rest of the head and on
        // in the largest window (not twice the read's end), and the next
        // one with it, while the whole first one is still to come: its new
        // connection's round trips pass while the first one streams.
        let windows = ReadBench.fetched(bench.read(at: mib))
        let largest = bench.tuning.maximumLinkWindow
        #expect(windows == [mib..<mib + largest, mib + largest..<mib + 2 * largest], "\(windows)")
        // Two windows on their way are enough.
        #expect(ReadBench.fetched(bench.read(at: mib + 128 * kib)).isEmpty)
    }

    @Test func aHomeLineKeepsTheHeadsStepsAndOneWindowAtATime() throws {
        var bench = try readTheHead(link: homeLine)
        // Past the scan's reach, twice the read's end: a scanner reading a
        // bigger cover pays about what it reads.
        let step = ReadBench.fetched(bench.read(at: mib))
        #expect(step == [mib..<2 * (mib + 128 * kib)], "\(step)")
        let id = try #require(bench.state.fetches.first { $0.value.cursor == mib }?.key)
        bench.head(id, step[0])
        bench.land(step[0])
        // Past the head, the windows: each next one waits until the one on
        // its way has almost arrived.
        var fetched: [Range<Int64>] = []
        var offset = 2 * mib + 256 * kib
        while offset < 6 * mib {
            fetched += ReadBench.fetched(bench.read(at: offset))
            offset += 128 * kib
        }
        let onTheLink = bench.state.fetches.values.filter { $0.cursor < $0.upper && $0.received < $0.upper }
        #expect(onTheLink.count <= 2, "a home line shares no more: \(fetched)")
        #expect(fetched.allSatisfy { $0.count <= Int(bench.tuning.maximumWindow) }, "\(fetched)")
    }
}
