@testable import PodFS
@testable import ReadRules
import RangeCache
import Testing

/// The memory that stands in for a full disk: it holds what it says it
/// holds, stays under its limit, and never drops bytes a reader waits for.
@Suite struct SpillBufferTests {
    private func bytes(_ count: Int, from offset: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: (offset + $0) &* 31 &+ 7) }
    }

    private func add(_ buffer: inout SpillBuffer, _ offset: Int, _ count: Int, limit: Int = 1 << 30, needed: [Range<Int64>] = []) {
        let chunk = bytes(count, from: offset)
        chunk.withUnsafeBytes { buffer.add($0, at: Int64(offset), limit: limit, needed: needed) }
    }

    private func read(_ buffer: SpillBuffer, _ range: Range<Int64>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(range.count))
        out.withUnsafeMutableBytes { SpillBuffer.copy(buffer.pieces(overlapping: range), of: range, into: $0) }
        return out
    }

    @Test func consecutiveChunksAreServedAcrossPieces() {
        var buffer = SpillBuffer()
        for index in 0..<40 { add(&buffer, index * 65536, 65536) }
        #expect(buffer.ranges.ranges == [0..<Int64(40 * 65536)])
        #expect(buffer.byteCount == 40 * 65536)
        #expect(buffer.pieces.count == 3, "appended up to 1 MiB per piece")
        let range: Range<Int64> = 1_000_000..<1_200_000
        #expect(SpillBuffer.covers(buffer.pieces(overlapping: range), range))
        #expect(read(buffer, range) == bytes(200_000, from: 1_000_000))
    }

    @Test func theOldestPiecesGoPastTheLimitButNotOnesAReaderWaitsFor() {
        var buffer = SpillBuffer()
        let mib = 1024 * 1024
        add(&buffer, 0, mib)
        add(&buffer, 10 * mib, mib)
        add(&buffer, 20 * mib, mib, limit: 2 * mib, needed: [0..<4096])
        #expect(buffer.byteCount == 2 * mib)
        #expect(buffer.ranges.contains(0..<Int64(mib)), "a waiting reader's bytes stay")
        #expect(!buffer.ranges.contains(Int64(10 * mib)), "the oldest other piece went")
        #expect(buffer.ranges.contains(Int64(20 * mib)..<Int64(21 * mib)))
        #expect(read(buffer, Int64(20 * mib)..<Int64(20 * mib + 10)) == bytes(10, from: 20 * mib))
    }

    @Test func partialCoverageIsNotCoverage() {
        var buffer = SpillBuffer()
        add(&buffer, 100, 100)
        #expect(!SpillBuffer.covers(buffer.pieces(overlapping: 50..<150), 50..<150))
        #expect(buffer.pieces(overlapping: 0..<100).isEmpty)
        buffer.removeAll()
        #expect(buffer.isEmpty && buffer.ranges.isEmpty && buffer.byteCount == 0)
    }
}
