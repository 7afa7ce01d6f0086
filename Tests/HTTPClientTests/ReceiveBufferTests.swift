import Testing

@testable import HTTPClient

/// libcurl's receive buffer per request (`Transfer.receiveBuffer`): a short
/// range comes in pieces small enough that its first bytes are handed over
/// before the rest is received and copied; a long body in few pieces.
@Suite struct ReceiveBufferTests {
    private let kib = 1024

    @Test func aProbeComesInFourPieces() {
        #expect(Transfer.receiveBuffer(for: 0..<Int64(256 * kib)) == 64 * kib)
    }

    @Test func aShortRangeHasAtLeastSixteenKibibytes() {
        #expect(Transfer.receiveBuffer(for: 0..<4096) == 16 * kib)
        #expect(Transfer.receiveBuffer(for: 100..<100) == 16 * kib)
    }

    @Test func aLongRangeOrAWholeBodyHasFiveHundredTwelveKibibytes() {
        #expect(Transfer.receiveBuffer(for: 0..<Int64(512 * kib)) == 512 * kib)
        #expect(Transfer.receiveBuffer(for: 0..<Int64.max) == 512 * kib)
        #expect(Transfer.receiveBuffer(for: nil) == 512 * kib)
    }
}
