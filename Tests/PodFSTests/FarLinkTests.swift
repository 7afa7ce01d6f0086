import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A far, fast origin (docs/DESIGN.md, "Read-ahead"): a link whose bytes in
/// flight hold an episode's head (`ReadTuning.farAndFast`) is read the way
/// `curl` reads it, one round trip for the head and one for the rest,
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

    /// A fresh file whose open's probe brought the first 1 MiB (the mount's
    /// first response), read in order to its end, on `link`.
    private func readTheProbe(link: LinkEstimate) -> ReadBench {
        var bench = ReadBench(length: length, present: [0..<mib], agreed: false, tuning: ReadTuning())
        bench.link = link
        for step in Int64(0)..<8 {
            #expect(ReadBench.fetched(bench.read(at: step * 128 * kib)).isEmpty, "the probe brought it")
        }
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
        var bench = readTheProbe(link: farAndFast)
        // The first read past the scan's reach: the rest of the head and on,
        // in one request of the largest window (not twice the read's end).
        let window = ReadBench.fetched(bench.read(at: mib))
        let largest = bench.tuning.maximumLinkWindow
        #expect(window == [mib..<mib + largest], "\(window)")
        // Until its head came, it is the one request on its way (two
        // responses have not agreed yet).
        #expect(ReadBench.fetched(bench.read(at: mib + 128 * kib)).isEmpty)
        let id = try #require(bench.state.fetches.first { $0.value.cursor == mib }?.key)
        bench.head(id, mib..<mib + largest)
        // Its head agreed, its body still to come: the next window goes out
        // now, so its new connection's round trips pass while this one
        // streams.
        let next = ReadBench.fetched(bench.read(at: mib + 256 * kib))
        #expect(next == [mib + largest..<mib + 2 * largest], "\(next)")
    }

    @Test func aHomeLineKeepsTheHeadsStepsAndOneWindowAtATime() throws {
        var bench = readTheProbe(link: homeLine)
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
