import Foundation
import Locking
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The fetch-ended event: retries of busy answers, and when to give up.
@Suite struct FetchEndedTests {
    private let mib = ReadBench.mib
    private let now = 1_795_435_200.0

    /// A read's fetch on its way; `arrived` bytes of it came (after its
    /// head) and were written.
    private func benchWithFetch(
        validated: Bool = true, arrived: Int64 = 0, read size: Int = 128 * 1024, handles: [UInt64] = [1]
    ) -> (ReadBench, UInt64) {
        var bench = ReadBench(length: 10 * ReadBench.mib, handles: handles, confirmed: validated)
        _ = bench.read(at: 0, size: size)
        let (id, progress) = bench.state.fetches.first!
        if arrived > 0 {
            bench.head(id, progress.cursor..<progress.upper)
            bench.land(progress.cursor..<arrived)
        }
        return (bench, id)
    }

    private func stateWithFetch(validated: Bool = true, arrived: Int64 = 0) -> (Episode.State, UInt64) {
        let (bench, id) = benchWithFetch(validated: validated, arrived: arrived)
        return (bench.state, id)
    }

    @Test(arguments: [408, 429, 500, 503])
    func aBusyAnswerIsRetriedFromWhereItStopped(status: Int) {
        var (state, id) = stateWithFetch(arrived: 4096)
        let failure = OriginAnswer(status: status, retryAfter: nil, now: now).failure(status: status, url: "http://o/a")
        let (effect, reported) = state.fetchEnded(id: id, error: failure, attempt: 1, tuning: EpisodeReader.Tuning())
        guard case .retry(let range, let validator, _, _, let delay) = effect else {
            Issue.record("HTTP \(status) is retried: \(effect)")
            return
        }
        #expect(range.lowerBound == 4096)
        #expect(validator == "\"v1\"")
        #expect(delay == 0.2)
        #expect(reported?.isTransient == true)
        #expect(state.fetches[id] != nil, "still on its way: reads join it")
    }

    /// A host that caps its answers (an honest 206 for less than asked):
    /// when the answer ends, the rest is asked at once, with no failure, no
    /// delay and no attempt counted, until all the reader waits for came.
    @Test func aShortButHonestAnswerIsFollowedByARequestForTheRest() throws {
        var bench = ReadBench(length: 10 * mib, handles: [1], confirmed: true)
        _ = bench.read(at: 0, size: 512 * 1024)
        let (id, progress) = try #require(bench.state.fetches.first { $0.value.cursor == 0 })
        let asked = progress.upper
        #expect(asked >= 512 * 1024)
        // Each answer: its head (capped), its bytes, its end.
        func answer(_ range: Range<Int64>, attempt: Int) -> (Episode.State.Effect, FetchError?) {
            bench.head(id, range)
            bench.arrive(id, count: Int(range.count))
            bench.write(id, range)
            return bench.state.fetchEnded(id: id, error: nil, attempt: attempt, tuning: EpisodeReader.Tuning())
        }
        let (effect, failure) = answer(0..<200_000, attempt: 0)
        #expect(failure == nil)
        #expect(effect.launched == Launched(range: 200_000..<asked, validator: "\"v1\"", url: ReadBench.url))
        #expect(bench.state.fetches[id]?.upper == asked, "the reads still wait on it")
        #expect(bench.state.waiters.count == 1)
        // The rest, capped again: asked again; then all of it came.
        #expect(answer(200_000..<400_000, attempt: 1).0.launched?.range == 400_000..<asked)
        let last = answer(400_000..<asked, attempt: 2)
        #expect(last.0.settles && last.1 == nil)
        #expect(bench.state.waiters.isEmpty, "answered")
    }

    /// While a capped answer was on its way, a read past its end started a
    /// fetch of its own there: the request for the rest asks only what
    /// neither brings, then goes on past that fetch, so no byte is asked
    /// twice.
    @Test func theRestOfACappedAnswerSkipsWhatAnotherFetchBrings() throws {
        var bench = ReadBench(length: 10 * mib, handles: [1, 2], confirmed: true)
        _ = bench.read(at: 0, size: 1024 * 1024)
        let (id, progress) = try #require(bench.state.fetches.first { $0.value.cursor == 0 })
        let asked = progress.upper
        bench.head(id, 0..<200_000)
        // Another reader, past the capped answer's end.
        _ = bench.read(2, at: 600_000, size: 4096)
        let other = try #require(bench.state.fetches.first { $0.value.cursor == 600_000 }, "a fetch of its own")
        #expect(other.value.upper < asked)
        bench.arrive(id, count: 200_000)
        bench.write(id, 0..<200_000)
        let (effect, failure) = bench.state.fetchEnded(id: id, error: nil, attempt: 0, tuning: EpisodeReader.Tuning())
        #expect(failure == nil)
        #expect(effect.launched?.range == 200_000..<600_000, "\(effect)")
        // That part answered whole: then what lies past the other fetch.
        bench.head(id, 200_000..<600_000)
        bench.arrive(id, count: 400_000)
        bench.write(id, 200_000..<600_000)
        let next = bench.state.fetchEnded(id: id, error: nil, attempt: 0, tuning: EpisodeReader.Tuning()).0
        #expect(next.launched?.range == other.value.upper..<asked, "\(next)")
    }

    /// Two capped answers at once: a read that came after the first one's
    /// head started a fetch of its own for the rest, also capped. When the
    /// first ends, the read waits on: the second asks its rest next.
    @Test func aReadWaitsOnWhatACappedFetchAsksNext() throws {
        var bench = ReadBench(length: 10 * mib, handles: [1, 2], confirmed: true)
        _ = bench.read(at: 0, size: 512 * 1024)
        let (first, _) = try #require(bench.state.fetches.first { $0.value.cursor == 0 })
        bench.head(first, 0..<200_000)
        _ = bench.read(2, at: 0, size: 1024 * 1024)
        let (second, progress) = try #require(bench.state.fetches.first { $0.value.cursor == 200_000 })
        bench.head(second, 200_000..<400_000)
        #expect(bench.state.fetches[second]?.upper == 400_000 && bench.state.fetches[second]?.askedUpTo == progress.upper)
        bench.arrive(first, count: 200_000)
        bench.write(first, 0..<200_000)
        let ended = bench.end(first)
        #expect(!ended.contains { if case .fail = $0 { return true } else { return false } }, "\(ended)")
        #expect(bench.state.waiters.count == 2, "both reads wait on the second fetch")
    }

    /// A 206 whose Content-Range does not start where the request asked
    /// (a lying host) is no answer to it: none of its bytes is taken.
    @Test func anAnswerForAnotherRangeIsRefused() throws {
        var bench = ReadBench(length: 10 * mib, handles: [1], confirmed: true)
        _ = bench.read(at: 0, size: 4096)
        let (id, progress) = try #require(bench.state.fetches.first)
        #expect(bench.state.fetches[id]?.cursor == 0, "the request asks from byte 0")
        func head(first: Int64, status: Int = 206) -> FetchHead {
            FetchHead(
                status: status, rangeFirst: first, rangeLast: progress.upper, total: 10 * Int64(mib), contentLength: nil,
                etag: "\"v1\"", lastModified: nil, effectiveURL: ReadBench.url)
        }
        guard case .unusable(let reason) = Episode.State.reading(head(first: 1), asked: 0) else {
            Issue.record("a range shifted by one byte is refused")
            return
        }
        #expect(reason.contains("bytes 1-") && reason.contains("request for bytes 0-"), "\(reason)")
        #expect(Episode.State.reading(head(first: 0), asked: 0) == .body(start: 0, last: progress.upper, total: 10 * Int64(mib)))
        // A 200 (the whole file) is no range answer: read as before.
        let whole = FetchHead(
            status: 200, rangeFirst: nil, rangeLast: nil, total: nil, contentLength: 10 * Int64(mib), etag: "\"v1\"",
            lastModified: nil, effectiveURL: ReadBench.url)
        #expect(Episode.State.reading(whole, asked: 4096) == .body(start: 0, last: nil, total: 10 * Int64(mib)))
    }

    @Test func aRetryAsksWhatIsLeftWhenItsDelayHasPassed() {
        // The reader waits for its first 8 KiB; 4 KiB of them came.
        var (bench, id) = benchWithFetch(arrived: 4096, read: 8192)
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        _ = bench.state.fetchEnded(id: id, error: busy, attempt: 1, tuning: EpisodeReader.Tuning())
        let upper = bench.state.fetches[id]!.upper
        #expect(bench.state.retryDue(id: id).launched == Launched(range: 4096..<upper, validator: "\"v1\"", url: ReadBench.url))
        // Meanwhile it yielded to the reader's jump: only what it kept (the
        // bytes the reader still waits for) is asked.
        _ = bench.read(at: 9 * mib, size: 4096)
        #expect(bench.state.fetches[id]?.upper == 8192)
        #expect(bench.state.retryDue(id: id).launched == Launched(range: 4096..<8192, validator: "\"v1\"", url: ReadBench.url))
        // It brought all it kept: nothing is asked, it is over.
        bench.arrive(id, count: 4096)
        bench.write(id, 4096..<8192)
        #expect(bench.state.retryDue(id: id).settles)
        #expect(bench.state.fetches[id] == nil)
    }

    @Test func aRetryOfAReplacedVersionIsNotSent() throws {
        var (bench, id) = benchWithFetch(handles: [1, 2])
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        _ = bench.state.fetchEnded(id: id, error: busy, attempt: 1, tuning: EpisodeReader.Tuning())
        // While it waits, an open an hour on finds a new version.
        bench.now += bench.tuning.revalidateAfter
        let probe = try #require(ReadBench.probes(bench.open(3)).first)
        bench.head(probe.id, probe.range, etag: "\"v2\"")
        #expect(bench.state.generation == 1)
        #expect(bench.state.retryDue(id: id).settles)
        #expect(bench.state.fetches[id] == nil)
        #expect(bench.state.retryDue(id: id).settles, "a fetch already forgotten")
    }

    @Test func retryAfterIsHonouredUpToWhatAReadWaits() {
        var (state, id) = stateWithFetch()
        let soon = OriginAnswer(status: 503, retryAfter: "3", now: now).failure(status: 503, url: "http://o/a")
        let (effect, _) = state.fetchEnded(id: id, error: soon, attempt: 1, tuning: EpisodeReader.Tuning())
        guard case .retry(_, _, _, _, let delay) = effect else {
            Issue.record("a short Retry-After is waited for: \(effect)")
            return
        }
        #expect(delay == 3)
        let late = OriginAnswer(status: 429, retryAfter: "120", now: now).failure(status: 429, url: "http://o/a")
        let (second, reported) = state.fetchEnded(id: id, error: late, attempt: 2, tuning: EpisodeReader.Tuning())
        guard case .settle = second else {
            Issue.record("a long Retry-After ends the fetch at once: \(second)")
            return
        }
        #expect(reported?.isTransient == false)
        #expect(reported?.message.contains("120 s") == true)
        #expect(state.fetches[id] == nil)
    }

    @Test func aFinalAnswerIsNotRetried() {
        var (state, id) = stateWithFetch()
        let gone = OriginAnswer(status: 404, retryAfter: nil, now: now).failure(status: 404, url: "http://o/a")
        guard case .settle = state.fetchEnded(id: id, error: gone, attempt: 1, tuning: EpisodeReader.Tuning()).0 else {
            Issue.record("a 404 is final")
            return
        }
    }

    @Test func attemptsRunOut() {
        var (state, id) = stateWithFetch()
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        let tuning = EpisodeReader.Tuning()
        guard case .settle = state.fetchEnded(id: id, error: busy, attempt: tuning.attempts, tuning: tuning).0 else {
            Issue.record("no attempt after the last")
            return
        }
    }

    @Test func aResponseThatEndsShortIsRetried() {
        var (state, id) = stateWithFetch(arrived: 1000)
        let (effect, reported) = state.fetchEnded(id: id, error: nil, attempt: 1, tuning: EpisodeReader.Tuning())
        guard case .retry(let range, _, _, _, _) = effect else {
            Issue.record("a short body is asked for again: \(effect)")
            return
        }
        #expect(range.lowerBound == 1000)
        #expect(reported?.message.contains("bytes early") == true)
    }

    @Test func offlineACachedEpisodeIsNotRetriedBeforeItWasConfirmed() {
        var (state, id) = stateWithFetch(validated: false)
        let unreachable = FetchError(isTransient: true, isUnreachable: true, message: "no route to host")
        guard case .settle = state.fetchEnded(id: id, error: unreachable, attempt: 1, tuning: EpisodeReader.Tuning()).0
        else {
            Issue.record("offline, the cache answers at once")
            return
        }
    }
}
