import Foundation
import Locking
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

extension Episode.Token {
    /// A request no kernel sent, for the rules' tests: the state carries
    /// tokens and names them in its effects, it never answers them.
    static func fake() -> Self {
        Self(wrapping: Placeholder())
    }

    private final class Placeholder: Sendable {}
}

extension Episode.Version {
    /// The version a mount restores from the index's record of it: its
    /// length and validators as told, `present` on disk (generation 0).
    static func restored(
        length: Int64?, etag: String? = "\"v1\"", lastModified: String? = nil, present: [Range<Int64>] = []
    ) -> Self {
        Self(restoring: EpisodeRecord(
            id: 1, key: "e", url: "http://o/a.mp3", length: length, etag: etag, lastModified: lastModified,
            ranges: present))
    }
}

/// Builds episode states and reads them, as the driver would.
struct ReadBench {
    static let mib: Int64 = 1024 * 1024
    var state = Episode.State()
    var tuning = EpisodeReader.Tuning()
    var link = LinkEstimate()
    var now = 1000.0

    init(
        length: Int64?, etag: String? = "\"v1\"", present: [Range<Int64>] = [], handles: [UInt64] = [1],
        agreed: Bool = true
    ) {
        // The read-ahead rules apart from the head's (`ScanReadTests` has
        // those): a reader reading from byte 0 reads on at once.
        tuning.head = 0
        state.current = .restored(length: length, etag: etag, present: present)
        state.validation = .confirmed(at: 0)
        // An episode two responses already agreed on (UnstableOriginTests
        // start before that).
        if agreed { state.current.agree() }
        for handle in handles { state.handles[handle] = Episode.HandleState(generation: 0) }
    }

    mutating func read(
        _ handle: UInt64 = 1, at offset: Int64, size: Int = 128 * 1024, reply: Episode.ReadToken = .fake()
    ) -> [Episode.State.Effect] {
        let context = Episode.State.ReadContext(now: now, wallClock: 1_795_435_200, link: link, tuning: tuning)
        return state.read(handle: handle, offset: offset, size: size, reply: reply, context: context)
    }

    /// The delay of a `.recheck` passed (`Episode.State.recheckDue`).
    mutating func recheck() -> [Episode.State.Effect] {
        let context = Episode.State.ReadContext(now: now, wallClock: 1_795_435_200, link: link, tuning: tuning)
        return state.recheckDue(context: context)
    }

    /// The bytes `effects` ask of the origin.
    static func fetched(_ effects: [Episode.State.Effect]) -> [Range<Int64>] {
        effects.compactMap { effect in
            if case .fetch(_, let range) = effect { return range }
            return nil
        }
    }

    static func served(_ effects: [Episode.State.Effect]) -> [Range<Int64>] {
        effects.compactMap { effect in
            if case .serve(_, let range, _) = effect { return range }
            return nil
        }
    }

    static func failed(_ effects: [Episode.State.Effect]) -> Int {
        effects.filter { if case .fail = $0 { return true } else { return false } }.count
    }

    /// The bytes of `id` arrive and are written: the driver's body events.
    mutating func land(_ range: Range<Int64>) {
        _ = state.current.wrote(range)
        for (id, progress) in state.fetches where progress.upper <= range.upperBound && progress.cursor >= range.lowerBound {
            state.fetches[id] = nil
        }
    }
}

/// The read event of one episode, driven without a mount: what it fetches,
/// what it serves, who waits (guarantees 2, 3, 4 and 5 of docs/DESIGN.md).
@Suite struct ReadStateTests {
    private let mib = ReadBench.mib

    // MARK: - Guarantee 2: one fetch per byte

    @Test func overlappingReadsFetchEachByteOnce() {
        var bench = ReadBench(length: 100 * mib, handles: [1, 2, 3])
        var asked = RangeSet()
        var total: Int64 = 0
        // Three readers jump into the middle at nearby, overlapping offsets.
        for (handle, offset) in [(1, 50 * mib), (2, 50 * mib + 4096), (3, 50 * mib - 8192), (1, 50 * mib + 100_000)] {
            for range in ReadBench.fetched(bench.read(UInt64(handle), at: offset)) {
                #expect(!asked.contains(range.lowerBound), "\(range) asked twice")
                asked.insert(range)
                total += Int64(range.count)
            }
        }
        #expect(asked.count == total, "no byte in two fetches")
        #expect(bench.state.waiters.count == 4)
    }

    @Test func aReadOfBytesOnTheirWayJoinsTheFetch() {
        var bench = ReadBench(length: 10 * mib, handles: [1, 2])
        let first = ReadBench.fetched(bench.read(1, at: 0))
        #expect(!first.isEmpty)
        let second = bench.read(2, at: 0)
        #expect(ReadBench.fetched(second).isEmpty)
        #expect(bench.state.waiters.count == 2)
    }

    @Test func aGapBetweenCachedBytesIsFetchedAloneNotOverTheCache() {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib, 2 * mib..<3 * mib])
        let fetched = ReadBench.fetched(bench.read(at: mib - 4096, size: 8192))
        #expect(fetched.first?.lowerBound == mib)
        #expect(fetched.allSatisfy { $0.lowerBound >= mib && $0.upperBound <= 2 * mib })
    }

    // MARK: - Read-ahead

    @Test func aSequentialReaderGrowsItsWindowFourfold() {
        var bench = ReadBench(length: 1024 * mib)
        var offset: Int64 = 0
        var windows: [Int64] = []
        for _ in 0..<6 {
            let effects = bench.read(at: offset)
            let fetched = ReadBench.fetched(effects)
            if let last = fetched.last { windows.append(Int64(last.count)) }
            for range in fetched { bench.land(range) }
            offset += 128 * 1024
        }
        #expect(bench.state.handles[1]?.streak == 7)
        // 1, 4, then 16 MiB, never more than the largest.
        #expect(Array(windows.prefix(3)) == [mib, 4 * mib, 16 * mib], "\(windows)")
        #expect(windows.allSatisfy { $0 <= bench.tuning.maximumWindow })
    }

    @Test func aJumpResetsTheStreak() {
        var bench = ReadBench(length: 1024 * mib)
        for step in 0..<4 { _ = bench.read(at: Int64(step) * 128 * 1024) }
        #expect(bench.state.handles[1]!.streak >= 4)
        _ = bench.read(at: 500 * mib)
        #expect(bench.state.handles[1]?.streak == 0)
        #expect(bench.state.handles[1]?.nextOffset == 500 * mib + 128 * 1024)
    }

    @Test func aJumpFromANearOriginFetchesWhatItAsked() {
        var bench = ReadBench(length: 1024 * mib)
        bench.link.observe(latency: 0.0002)
        let fetched = ReadBench.fetched(bench.read(at: 300 * mib, size: 4096))
        #expect(fetched == [300 * mib..<300 * mib + bench.tuning.jumpFetch])
    }

    @Test func aReopenThatReadsOnKeepsItsStream() {
        var bench = ReadBench(length: 1024 * mib, handles: [1, 2])
        bench.state.lastStream = (end: 64 * mib, streak: 5, closedAt: bench.now - 1)
        _ = bench.read(2, at: 64 * mib)
        #expect(bench.state.handles[2]?.streak == 6)
        #expect(bench.state.lastStream == nil)
    }

    // MARK: - Guarantee 3: no mixed versions

    @Test func aHandleOfAReplacedVersionReadsEIO() {
        var bench = ReadBench(length: 10 * mib, present: [0..<10 * mib])
        bench.state.current.replaced()
        let effects = bench.read(at: 0)
        #expect(ReadBench.failed(effects) == 1)
        #expect(ReadBench.fetched(effects).isEmpty && ReadBench.served(effects).isEmpty)
    }

    @Test func anUnknownHandleReadsEIO() {
        var bench = ReadBench(length: 10 * mib)
        #expect(ReadBench.failed(bench.read(9, at: 0)) == 1)
    }

    // MARK: - Guarantee 4: real sizes

    @Test func aReadPastTheEndIsShortOrEmpty() {
        var bench = ReadBench(length: 1000, present: [0..<1000])
        #expect(ReadBench.served(bench.read(at: 900, size: 4096)) == [900..<1000])
        let empty = bench.read(at: 1000, size: 4096)
        guard case .answerEmpty = empty.first else {
            Issue.record("a read at the end is answered with no bytes: \(empty)")
            return
        }
    }

    @Test func noLengthNoBytes() {
        var bench = ReadBench(length: nil)
        #expect(ReadBench.failed(bench.read(at: 0)) == 1)
    }

    // MARK: - Guarantee 5: offline, cached bytes are served

    @Test func cachedBytesAreServedWithoutAFetch() {
        var bench = ReadBench(length: 10 * mib, present: [0..<10 * mib])
        bench.state.validation = .unconfirmed(lastConfirmed: nil)
        let effects = bench.read(at: 5 * mib, size: 4096)
        #expect(ReadBench.served(effects) == [5 * mib..<5 * mib + 4096])
        #expect(ReadBench.fetched(effects).isEmpty)
        #expect(bench.state.waiters.isEmpty)
    }

    // MARK: - The open's probe

    @Test func aProvisionalHandleWaitsForTheFirstResponse() {
        var bench = ReadBench(length: 10 * mib)
        bench.state.handles[1]?.provisional = true
        #expect(bench.read(at: 0).isEmpty)
        #expect(bench.state.earlyReads.count == 1)
        #expect(bench.state.fetches.isEmpty)
    }
}

/// The fetch-ended event: retries of busy answers, and when to give up.
@Suite struct FetchEndedTests {
    private let now = 1_795_435_200.0

    private func stateWithFetch(validated: Bool = true) -> (Episode.State, UInt64) {
        var bench = ReadBench(length: 10 * ReadBench.mib)
        bench.state.validation = validated ? .confirmed(at: 0) : .unconfirmed(lastConfirmed: nil)
        _ = bench.read(at: 0)
        return (bench.state, bench.state.fetches.keys.first!)
    }

    @Test(arguments: [408, 429, 500, 503])
    func aBusyAnswerIsRetriedFromWhereItStopped(status: Int) {
        var (state, id) = stateWithFetch()
        state.fetches[id]?.cursor = 4096
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

    @Test func aRetryAsksWhatIsLeftWhenItsDelayHasPassed() {
        var (state, id) = stateWithFetch()
        state.fetches[id]?.cursor = 4096
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        _ = state.fetchEnded(id: id, error: busy, attempt: 1, tuning: EpisodeReader.Tuning())
        let upper = state.fetches[id]!.upper
        #expect(state.retryDue(id: id) == .launch(range: 4096..<upper, validator: "\"v1\"", url: nil))
        // Meanwhile it yielded to a jump: only what it kept is asked.
        state.fetches[id]?.upper = 8192
        #expect(state.retryDue(id: id) == .launch(range: 4096..<8192, validator: "\"v1\"", url: nil))
        // It yielded all it had: nothing is asked, it is over.
        state.fetches[id]?.upper = 4096
        #expect(state.retryDue(id: id) == .settle)
        #expect(state.fetches[id] == nil)
    }

    @Test func aRetryOfAReplacedVersionIsNotSent() {
        var (state, id) = stateWithFetch()
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        _ = state.fetchEnded(id: id, error: busy, attempt: 1, tuning: EpisodeReader.Tuning())
        state.current.replaced()
        #expect(state.retryDue(id: id) == .settle)
        #expect(state.fetches[id] == nil)
        #expect(state.retryDue(id: id) == .settle, "a fetch already forgotten")
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
        guard case .ended = second else {
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
        guard case .ended = state.fetchEnded(id: id, error: gone, attempt: 1, tuning: EpisodeReader.Tuning()).0 else {
            Issue.record("a 404 is final")
            return
        }
    }

    @Test func attemptsRunOut() {
        var (state, id) = stateWithFetch()
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        let tuning = EpisodeReader.Tuning()
        guard case .ended = state.fetchEnded(id: id, error: busy, attempt: tuning.attempts, tuning: tuning).0 else {
            Issue.record("no attempt after the last")
            return
        }
    }

    @Test func aResponseThatEndsShortIsRetried() {
        var (state, id) = stateWithFetch()
        state.fetches[id]?.cursor = 1000
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
        guard case .ended = state.fetchEnded(id: id, error: unreachable, attempt: 1, tuning: EpisodeReader.Tuning()).0
        else {
            Issue.record("offline, the cache answers at once")
            return
        }
    }
}
