import Testing

@testable import PodFS

/// Which episodes whose feed gives no length have their size asked of the
/// origin, in what order and how many at once (docs/DESIGN.md, "Real
/// sizes").
@Suite struct SizeChecksTests {
    /// Episodes of `show` published on `days` (keys "<show>-<day>").
    private func episodes(_ show: String, _ days: [Int]) -> [SizeChecks.Candidate] {
        days.map { SizeChecks.Candidate(key: "\(show)-\($0)", show: show, date: Int64($0) * 86_400) }
    }

    /// Takes every check that may go now.
    private func drain(_ checks: inout SizeChecks, now: Double) -> [String] {
        var sent: [String] = []
        while let next = checks.next(now: now) { sent.append(next.key) }
        return sent
    }

    @Test func theNewestGoFirstAcrossShowsFourAtATime() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 5, 3]) + episodes("b", [4, 2, 6]))
        #expect(drain(&checks, now: 0) == ["b-6", "a-5", "b-4", "a-3"])
        #expect(checks.next(now: 0) == nil, "at most four on their way")
        checks.ended("a-5", sized: true, now: 1)
        #expect(checks.next(now: 1)?.key == "b-2")
        for key in ["b-6", "b-4", "a-3", "b-2"] { checks.ended(key, sized: true, now: 2) }
        #expect(drain(&checks, now: 2) == ["a-1"])
        checks.ended("a-1", sized: true, now: 3)
        #expect(checks.isIdle(now: 3))
    }

    @Test func aReplanKeepsWhatIsOnItsWayOnce() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 2]))
        #expect(checks.next(now: 0)?.key == "a-2")
        // A refresh lists a newer episode; "a-2" is still on its way.
        checks.replan(episodes("a", [1, 2, 3]))
        #expect(drain(&checks, now: 0) == ["a-3", "a-1"])
        #expect(!checks.isIdle(now: 0))
    }

    @Test func aFailedEpisodeIsAskedAgainAfterTheRetryOnly() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1]))
        _ = checks.next(now: 0)
        checks.ended("a-1", sized: false, now: 10)
        #expect(checks.next(now: 11) == nil)
        #expect(checks.isIdle(now: 11), "nothing to do until the retry")
        checks.replan(episodes("a", [1]))
        #expect(checks.next(now: 10 + SizeChecks.retry - 1) == nil, "a replan does not bring it back sooner")
        #expect(checks.next(now: 10 + SizeChecks.retry)?.key == "a-1")
    }

    @Test func aShowWhoseChecksKeepFailingRestsWhileOthersGoOn() {
        var checks = SizeChecks()
        checks.replan(episodes("dead", [10, 9, 8, 7, 6]) + episodes("live", [1, 2]))
        #expect(drain(&checks, now: 0) == ["dead-10", "dead-9", "dead-8", "dead-7"])
        #expect(checks.ended("dead-10", sized: false, now: 1) == nil)
        #expect(checks.ended("dead-9", sized: false, now: 1) == nil)
        #expect(checks.ended("dead-8", sized: false, now: 1) == "dead", "the third failure in a row rests the show")
        // Its other episodes wait; the live show's go.
        #expect(drain(&checks, now: 2) == ["live-2", "live-1"])
        checks.ended("dead-7", sized: true, now: 3)
        checks.ended("live-2", sized: true, now: 3)
        checks.ended("live-1", sized: true, now: 3)
        #expect(checks.isIdle(now: 3))
        #expect(drain(&checks, now: 1 + SizeChecks.retry) == ["dead-10", "dead-9", "dead-8", "dead-6"])
    }

    @Test func aSuccessEndsARunOfFailures() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 2, 3, 4, 5, 6]))
        _ = drain(&checks, now: 0)
        checks.ended("a-6", sized: false, now: 1)
        checks.ended("a-5", sized: false, now: 1)
        checks.ended("a-4", sized: true, now: 1)
        #expect(checks.ended("a-3", sized: false, now: 1) == nil, "two failures, a success, one failure: no rest")
        #expect(drain(&checks, now: 1) == ["a-2", "a-1"])
    }
}
