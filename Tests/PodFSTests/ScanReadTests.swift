import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Who reads (docs/DESIGN.md, "Who reads"): a scanner reads a file's head
/// and tail and closes it, a listener moves on through the body. A reader
/// in the head fetches nothing it did not ask for past the head, and
/// fetches nobody reads stop a grace after the last close.
@Suite struct ScanReadTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024

    /// A fresh file of a 9 MiB episode, with the default tuning, 256 KiB
    /// cached by the open's probe.
    private func opened(agreed: Bool = true) -> ReadBench {
        var bench = ReadBench(length: 9 * mib, present: [0..<256 * kib], agreed: agreed)
        bench.tuning = EpisodeReader.Tuning()
        return bench
    }

    /// Everything `effects` and the fetches before asked of the origin.
    private func asked(_ bench: ReadBench, _ fetched: [Range<Int64>]) -> Int64 {
        fetched.reduce(256 * kib) { $0 + Int64($1.count) }
    }

    @Test func aScannerReadingTheHeadAndTheTailCostsAMebibyteAndTheLastPage() {
        var bench = opened()
        var fetched: [Range<Int64>] = []
        // The tags (a 300 KiB ID3 tag with its cover) and the first frames,
        // through the kernel's read-ahead: 128 KiB reads up to 1 MiB.
        for step in Int64(0)..<8 {
            let effects = bench.read(at: step * 128 * kib, size: 128 * 1024)
            fetched += ReadBench.fetched(effects)
            for range in ReadBench.fetched(effects) { bench.land(range) }
        }
        #expect(fetched == [256 * kib..<mib], "one request for the head, nothing past it: \(fetched)")
        // Then the tail (ID3v1, APE): the last page.
        let tail = bench.read(at: 9 * mib - 4096, size: 4096)
        fetched += ReadBench.fetched(tail)
        #expect(ReadBench.fetched(tail) == [9 * mib - 4096..<9 * mib])
        let total = asked(bench, fetched)
        #expect(total <= mib + 4096, "\(total) bytes for a scan")
    }

    /// The head's fetch reaches `scanReach` whether or not two responses
    /// agreed yet: its response is the second one, which shows a host that
    /// stitches before the next open.
    @Test(arguments: [false, true])
    func aReadInTheHeadSendsOneFetchToTheScanReach(agreed: Bool) {
        var bench = opened(agreed: agreed)
        var fetched: [Range<Int64>] = []
        for step in Int64(0)..<2 {
            fetched += ReadBench.fetched(bench.read(at: step * 64 * kib, size: 64 * 1024))
        }
        #expect(fetched == [256 * kib..<mib], "one fetch: \(fetched)")
        // A read past the reach, still in the head, fetches to twice its
        // end: a listener's next MiB in one request, not one a read.
        for range in fetched { bench.land(range) }
        let next = ReadBench.fetched(bench.read(at: mib, size: 128 * 1024))
        #expect(next == [mib..<2 * (mib + 128 * kib)], "\(next)")
    }

    /// Each read notes where its file read (`ReadExtent`), with the
    /// episode's length as the read sees it: what `ScanPattern` is given
    /// when the file closes.
    @Test func readsNoteWhereTheFileRead() {
        var bench = opened()
        _ = bench.read(at: 0, size: 128 * 1024)
        _ = bench.read(at: 9 * mib - 4096, size: 4096)
        let extent = bench.state.handles[1]?.extent
        #expect(extent?.reads == 2 && extent?.headEnd == 128 * kib && extent?.tailSize == 4096)
        #expect(extent?.body == false && extent?.length == 9 * mib)
        _ = bench.read(at: 5 * mib, size: 128 * 1024)
        #expect(bench.state.handles[1]?.extent.body == true)
    }

    @Test func aListenerThatMovesOnPastTheHeadGetsItsWindowsAgain() {
        var bench = opened()
        // The kernel reads 768 KiB at a time.
        for step in Int64(0)..<5 {
            for range in ReadBench.fetched(bench.read(at: step * 768 * kib, size: 768 * 1024)) { bench.land(range) }
        }
        #expect(bench.state.present.ranges == [0..<4 * mib], "in the head, to the head's end")
        let past = ReadBench.fetched(bench.read(at: 3840 * kib, size: 768 * 1024))
        let furthest = past.map(\.upperBound).max() ?? 0
        #expect(furthest == 9 * mib, "the read-ahead reaches on: \(past)")
    }

    @Test func fetchesNobodyReadsStopAGraceAfterTheLastClose() throws {
        var bench = ReadBench(length: 64 * mib, present: [0..<mib])
        // The player played from 40 MiB a while (its reads answered), then
        // went back to the start: the read-ahead it left behind there gave
        // up its bytes (deferred).
        var ahead: [Range<Int64>] = []
        for step: Int64 in 0..<3 { ahead += ReadBench.fetched(bench.read(at: 40 * mib + step * 128 * kib)) }
        let left = try #require(ahead.last)
        bench.land(40 * mib..<40 * mib + 3 * 128 * kib)
        _ = bench.read(at: 0, size: 128 * 1024)
        #expect(bench.state.deferred.contains(left.upperBound - 1))
        // It reads on: the read-ahead's stream goes out.
        var effects: [Episode.State.Effect] = []
        for step: Int64 in 1...3 where ReadBench.fetched(effects).isEmpty {
            effects = bench.read(at: step * 128 * kib, size: 128 * 1024)
        }
        let stream = try #require(bench.state.fetches.keys.max())
        let range = try #require(ReadBench.fetched(effects).last)
        #expect(range.lowerBound == mib)
        // Its first 512 KiB arrived.
        bench.head(stream, range)
        bench.arrive(stream, count: Int(512 * kib))
        #expect(bench.state.fetches[stream]?.received == mib + 512 * kib)
        _ = bench.state.release(handle: 1, now: 100)
        let first = bench.state.closings
        #expect(bench.state.streamsUnread, "the driver asks again after the grace")
        // A player that reopens within the grace keeps its stream.
        bench.open(2)
        #expect(bench.state.handles[2] != nil)
        #expect(bench.state.stopUnreadStreams(afterClosing: first).isEmpty)
        _ = bench.state.release(handle: 2, now: 103)
        #expect(bench.state.stopUnreadStreams(afterClosing: first).isEmpty, "a grace from the last close")
        let stopped = bench.state.stopUnreadStreams(afterClosing: bench.state.closings)
        #expect(stopped == [stream])
        #expect(bench.state.fetches[stream]?.upper == mib + 512 * kib, "what came stays")
        #expect(bench.state.fetches[stream]?.cutShort == true)
        #expect(bench.state.deferred.isEmpty && bench.state.fillFetch() == nil, "nothing is filled later")
    }

    @Test func anOpenCheckIsNotStoppedWithTheStreams() throws {
        // Head and tail cached: the open is answered from the cache and
        // sends a check; then the file is closed.
        var bench = ReadBench(
            length: 64 * mib, present: [0..<mib, 63 * mib..<64 * mib], handles: [], confirmed: false)
        let opened = bench.state.open(
            handle: 1, reply: .fake(), now: 0, feedLength: nil, tuning: bench.tuning)
        let check = try #require(opened.compactMap { if case .check(let check) = $0 { check } else { nil } }.first)
        _ = bench.state.release(handle: 1, now: 0)
        #expect(!bench.state.streamsUnread)
        #expect(bench.state.stopUnreadStreams(afterClosing: bench.state.closings).isEmpty)
        #expect(bench.state.fetches[check.id] != nil)
    }
}

/// A listener reading on through the head (docs/DESIGN.md, "Who reads"):
/// its reach doubles with its reads, in a few requests, each out before
/// the reader needs it.
@Suite struct ListenerHeadTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024

    @Test func aListenersFirstFourMebibytesTakeAFewRequestsEachAheadOfIt() {
        var bench = ReadBench(length: 60 * mib, present: [0..<256 * kib])
        bench.tuning = ReadTuning()
        var fetched: [Range<Int64>] = []
        var waited = 0
        var offset: Int64 = 0
        while offset < bench.tuning.head {
            let effects = bench.read(at: offset)
            fetched += ReadBench.fetched(effects)
            if ReadBench.served(effects).isEmpty { waited += 1 }
            // What was asked arrives before the next read.
            for range in ReadBench.fetched(effects) { bench.land(range) }
            offset += 128 * kib
        }
        let inHead = fetched.filter { $0.lowerBound < bench.tuning.head }
        #expect(inHead.count <= 4, "requests in the head: \(fetched)")
        #expect(inHead.allSatisfy { $0.count >= 256 * 1024 }, "\(fetched)")
        // Each byte of the head asked once.
        var asked = RangeSet()
        for range in inHead {
            #expect(asked.gaps(in: range) == [range], "\(range) asked twice: \(fetched)")
            asked.insert(range)
        }
        #expect(waited <= 2, "reads that waited for a request of their own: \(waited)")
    }
}
