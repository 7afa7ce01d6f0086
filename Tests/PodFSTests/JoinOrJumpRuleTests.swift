import Foundation
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The join-or-jump rule itself (docs/DESIGN.md, "Join or jump"): when a
/// fetch on its way brings a read's bytes sooner than a request of its own.
/// `JoinOrJumpTests` drives it through the episode's events.
@Suite struct JoinOrJumpRuleTests {
    private let mib = ReadBench.mib
    private let kib: Int64 = 1024

    @Test func aSeekFarAheadOfTheStreamJumps() {
        // 20 minutes ahead at 2 MB/s: 9.6 s by the stream, 0.13 s alone.
        let joins = JoinOrJump.joins(
            position: 19_200_000, received: 262_144, need: 64 * kib, following: false, rate: 2_000_000,
            roundTrip: 0.1)
        #expect(!joins)
    }

    @Test func aReadJustAheadOfTheStreamJoins() {
        // 100 KB at 2 MB/s is 50 ms: sooner than a round trip.
        #expect(
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 64 * kib, following: false, rate: 2_000_000,
                roundTrip: 0.1))
        // Bytes that already arrived are joined whatever the link.
        #expect(
            JoinOrJump.joins(position: 5, received: 10, need: 1, following: false, rate: 1, roundTrip: 100))
    }

    @Test func theArrivalTimesDecideAtTheirMeetingPoint() {
        // Round trip 0.1 s + the gain a jump must bring (0.1 s) at 2 MB/s,
        // + 64 KiB: the stream ties at 465,536 B.
        let tie: Int64 = 400_000 + 65_536
        let at = { (distance: Int64) in
            JoinOrJump.joins(
                position: distance, received: 0, need: 65_536, following: false, rate: 2_000_000, roundTrip: 0.1)
        }
        #expect(at(tie))
        #expect(!at(tie + 1))
    }

    @Test func aJumpThatWouldSaveMillisecondsDoesNotCutAFastStream() {
        // Seen on loopback with eight readers sharing the page cache: a
        // read 1.5 MiB ahead of a 172 MB/s stream silent for 3 ms. Its own
        // request would bring it about 4 ms sooner; cutting the stream
        // cost what it had in flight.
        let read = { (silence: Double) in
            JoinOrJump.joins(
                position: 3_407_872, received: 1_835_008, need: 1 * self.mib, following: false, rate: 172_250_168,
                roundTrip: 0.0023, silence: silence)
        }
        #expect(read(0.003))
        // A stream held back for longer than the gain is still left.
        #expect(!read(0.12))
        // So is one far enough ahead: 100 ms of the link and more.
        #expect(
            !JoinOrJump.joins(
                position: 40 * mib, received: 1_835_008, need: 1 * mib, following: false, rate: 172_250_168,
                roundTrip: 0.0023, silence: 0))
    }

    @Test func aReaderThatReadsOnStaysWithItsStream() {
        // The kernel's read-ahead runs a little ahead of the bytes: a read
        // that follows on never cuts its own stream.
        #expect(
            JoinOrJump.joins(
                position: 1 * mib + 1, received: 0, need: 128 * kib, following: true, rate: 100_000_000,
                roundTrip: 0.0005))
        #expect(
            JoinOrJump.joins(
                position: 10 * mib, received: 0, need: 128 * kib, following: true, rate: 2_000_000, roundTrip: 0.1))
    }

    @Test func anUnmeasuredLinkJoinsOnlyNearby() {
        let at = { (position: Int64) in
            JoinOrJump.joins(position: position, received: 0, need: 1, following: false, rate: nil, roundTrip: 0.1)
        }
        #expect(at(ReadPlan.nearby))
        #expect(!at(ReadPlan.nearby + 1))
    }

    @Test func aStreamSilentLongerThanARoundTripLosesEvenJustAhead() {
        // 100 KB ahead of a 2 MB/s stream: joined while it flows, but not
        // once it brought nothing for longer than a round trip and the
        // gain a jump must bring.
        let at = { (silence: Double) in
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 64 * 1024, following: false, rate: 2_000_000,
                roundTrip: 0.1, silence: silence)
        }
        #expect(at(0))
        #expect(at(0.01))
        #expect(!at(0.2))
        // A reader that reads on stays, silence or not (a stalled
        // connection is the transfer's timeout's to end).
        #expect(
            JoinOrJump.joins(
                position: 1_100_000, received: 1_000_000, need: 1, following: true, rate: 2_000_000, roundTrip: 0.1,
                silence: 30))
    }

    @Test func anUnmeasuredLinkJoinsOnlyAFetchThatIsNotSilent() {
        let at = { (silence: Double) in
            JoinOrJump.joins(position: 100, received: 0, need: 1, following: false, rate: nil, roundTrip: nil, silence: silence)
        }
        #expect(at(JoinOrJump.quietSilence))
        #expect(!at(JoinOrJump.quietSilence + 0.01))
    }

    @Test func theRecheckComesAfterTwiceARequestOfItsOwnWithinBounds() {
        // 0.1 s + 64 KiB at 2 MB/s = 0.133 s: judged again at 0.266 s.
        let delay = JoinOrJump.recheckDelay(need: 65_536, rate: 2_000_000, roundTrip: 0.1)
        #expect(abs(delay - 2 * (0.1 + 65_536.0 / 2_000_000)) < 1e-9)
        #expect(JoinOrJump.recheckDelay(need: 1, rate: 1e9, roundTrip: 0.0001) == 0.1)
        #expect(JoinOrJump.recheckDelay(need: 64 * 1024 * 1024, rate: 1000, roundTrip: 5) == 1)
        #expect(JoinOrJump.recheckDelay(need: 1, rate: nil, roundTrip: nil) == JoinOrJump.quietSilence)
    }
}
