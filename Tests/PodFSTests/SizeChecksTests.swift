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

    @Test func aShowsFirstCheckGoesAloneThenTheNewestGoFourAtATime() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 5, 3, 7]) + episodes("b", [4, 2, 6]))
        // One a show until its host answers with a byte.
        #expect(drain(&checks, now: 0) == ["a-7", "b-6"])
        checks.ended("a-7", .sized, now: 1)
        checks.ended("b-6", .sized, now: 1)
        #expect(drain(&checks, now: 1) == ["a-5", "b-4", "a-3", "b-2"], "newest first across shows")
        #expect(checks.next(now: 1) == nil, "at most four on their way")
        checks.ended("a-5", .sized, now: 2)
        #expect(checks.next(now: 2)?.key == "a-1")
        for key in ["b-4", "a-3", "b-2", "a-1"] { checks.ended(key, .sized, now: 3) }
        #expect(checks.isIdle(now: 3))
    }

    @Test func aReplanKeepsWhatIsOnItsWayOnce() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 2]))
        #expect(checks.next(now: 0)?.key == "a-2")
        // A refresh lists a newer episode; "a-2" is still on its way.
        checks.replan(episodes("a", [1, 2, 3]))
        #expect(checks.next(now: 0) == nil, "the show's first check is on its way")
        checks.ended("a-2", .sized, now: 1)
        #expect(drain(&checks, now: 1) == ["a-3", "a-1"])
    }

    @Test func aFailedEpisodeIsAskedAgainAfterTheRetryOnly() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1]))
        _ = checks.next(now: 0)
        checks.ended("a-1", .failed, now: 10)
        #expect(checks.next(now: 11) == nil)
        #expect(checks.isIdle(now: 11), "nothing to do until the retry")
        checks.replan(episodes("a", [1]))
        #expect(checks.next(now: 10 + SizeChecks.retry - 1) == nil, "a replan does not bring it back sooner")
        #expect(checks.next(now: 10 + SizeChecks.retry)?.key == "a-1")
    }

    @Test func aShowWhoseChecksKeepFailingRestsWhileOthersGoOn() {
        var checks = SizeChecks()
        checks.replan(episodes("dead", [10, 9, 8, 7]) + episodes("live", [1, 2]))
        #expect(drain(&checks, now: 0) == ["dead-10", "live-2"])
        #expect(checks.ended("dead-10", .failed, now: 1) == nil)
        #expect(drain(&checks, now: 1) == ["dead-9"], "the dead show's next, alone; the live one's waits for its first")
        #expect(checks.ended("dead-9", .failed, now: 2) == nil)
        #expect(drain(&checks, now: 2) == ["dead-8"])
        #expect(checks.ended("dead-8", .failed, now: 3) == "dead", "the third failure in a row rests the show")
        #expect(drain(&checks, now: 3).isEmpty, "nothing of the resting show")
        checks.ended("live-2", .sized, now: 4)
        #expect(drain(&checks, now: 4) == ["live-1"])
        checks.ended("live-1", .sized, now: 5)
        #expect(checks.isIdle(now: 5))
        // After the rest, one at a time again, and the episodes never asked
        // first: the newest that failed do not keep them from being asked.
        #expect(drain(&checks, now: 3 + SizeChecks.retry) == ["dead-7"])
        checks.ended("dead-7", .failed, now: 4 + SizeChecks.retry)
        #expect(drain(&checks, now: 4 + SizeChecks.retry) == ["dead-10"], "then the failed ones, newest first")
    }

    @Test func aSuccessEndsARunOfFailures() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 2, 3, 4, 5, 6]))
        #expect(drain(&checks, now: 0) == ["a-6"])
        checks.ended("a-6", .sized, now: 1)
        #expect(drain(&checks, now: 1) == ["a-5", "a-4", "a-3", "a-2"])
        checks.ended("a-5", .failed, now: 2)
        checks.ended("a-4", .failed, now: 2)
        checks.ended("a-3", .sized, now: 2)
        #expect(checks.ended("a-2", .failed, now: 2) == nil, "two failures, a success, one failure: no rest")
        #expect(drain(&checks, now: 2) == ["a-1"])
    }

    @Test func aHostThatSendsWholeEpisodesRestsItsShowAtOnce() {
        var checks = SizeChecks()
        checks.replan(episodes("whole", [1, 2, 3]))
        #expect(drain(&checks, now: 0) == ["whole-3"])
        #expect(checks.ended("whole-3", .whole, now: 1) == "whole", "the size is told, the show rests")
        #expect(checks.isIdle(now: 1))
        #expect(checks.next(now: 1 + SizeChecks.retry)?.key == "whole-2")
    }

    @Test func aHostThatProvesNothingRestsItsShowAtOnce() {
        var checks = SizeChecks()
        checks.replan(episodes("weak", [1, 2]))
        #expect(drain(&checks, now: 0) == ["weak-2"])
        #expect(checks.ended("weak-2", .unproven, now: 1) == "weak")
        #expect(checks.isIdle(now: 1))
    }

    @Test func aCheckNotSentFreesItsPlace() {
        var checks = SizeChecks()
        checks.replan(episodes("a", [1, 2]))
        #expect(checks.next(now: 0)?.key == "a-2")
        checks.dropped("a-2")
        #expect(checks.next(now: 0)?.key == "a-1")
    }
}
