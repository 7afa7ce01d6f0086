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

/// Builds episode states by the events a driver calls, and reads them as
/// it would. No field of the state is written: an episode is restored from
/// the index's record, confirmed by the origin's answer to a check, opened,
/// and its bytes arrive as the body of the fetch that asked for them.
struct ReadBench {
    static let mib: Int64 = 1024 * 1024
    /// The link the bench's origin answers from (the head pins it).
    static let url = "http://o/a.mp3"
    /// A strong Last-Modified: a validator that proves a version, with no
    /// ETag (the bench's version without a strong ETag).
    static let lastModified = "Tue, 24 Nov 2026 10:00:00 GMT"
    var state = Episode.State()
    var tuning = EpisodeReader.Tuning()
    var link = LinkEstimate()
    var now = 1000.0
    /// The version's validators, as the origin sends them.
    let etag: String?
    let lastModified: String?
    /// Where the origin's answers come from: the end of the redirect chain
    /// the index pinned, and the link every head comes from.
    let url: String

    /// An episode of `length` bytes with `present` cached, confirmed by a
    /// response of this mount, and `handles` open on it, reading nothing.
    ///
    /// `agreed`: two responses agreed on the version (a strong ETag the
    /// index kept, confirmed again). `false`: the first response of the
    /// mount told the version of an episode nothing was cached of, and
    /// brought `present` (its first `minimumFetch` bytes) as the open's
    /// probe (UnstableOriginTests start before a second response came).
    /// `confirmed` `false`: offline since the mount, the files were opened
    /// from the cache when their probes found no origin.
    /// `length` `nil`: nothing told the length, the open's probe found no
    /// episode (a 404), and the files stayed open on nothing.
    init(
        length: Int64?, etag: String? = "\"v1\"", lastModified: String? = nil, present: [Range<Int64>] = [],
        handles: [UInt64] = [1], agreed: Bool = true, confirmed: Bool = true, url: String = ReadBench.url
    ) {
        self.etag = etag
        self.lastModified = lastModified
        self.url = url
        // The read-ahead rules apart from the head's (`ScanReadTests` has
        // those): a reader reading from byte 0 reads on at once.
        tuning.head = 0
        guard let length else {
            unsized(handles: handles)
            return
        }
        guard confirmed else {
            offline(length: length, present: present, handles: handles)
            return
        }
        if agreed {
            restoredAndChecked(length: length, present: present)
        } else {
            firstResponse(length: length, present: present, opening: handles.first)
        }
        for handle in handles where state.handles[handle] == nil { open(handle) }
    }

    // MARK: - Events a driver calls

    /// Opens `handle` as the kernel's open does; returns the open's effects.
    @discardableResult
    mutating func open(_ handle: UInt64, reply: Episode.OpenToken = .fake(), feedLength: Int64? = nil)
        -> [Episode.State.Effect]
    {
        state.open(
            handle: handle, reply: reply, now: now, feedLength: feedLength ?? state.length, tuning: tuning)
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

    /// The origin's 206 head for fetch `id`, whose body starts at `start`
    /// and ends before `end`, of this bench's version of `total` bytes.
    @discardableResult
    mutating func head(
        _ id: UInt64, _ range: Range<Int64>, total: Int64? = nil, etag: String?? = nil,
        lastModified: String?? = nil
    ) -> (verdict: Episode.State.HeadVerdict, transition: Episode.State.Transition) {
        let total = total ?? state.length ?? range.upperBound
        let head = FetchHead(
            status: 206, rangeFirst: range.lowerBound, rangeLast: range.upperBound - 1, total: total,
            contentLength: nil, etag: etag ?? self.etag, lastModified: lastModified ?? self.lastModified,
            effectiveURL: url)
        let context = Episode.State.HeadContext(
            now: now, feedLength: total, isBackground: false, holdingIndexLock: true)
        return state.head(id: id, head, start: range.lowerBound, last: range.upperBound - 1, total: total, context: context)
    }

    /// Bytes of fetch `id` arrive on the network thread, from where its
    /// body has come, up to `upTo` (at most its end): `count` of them.
    @discardableResult
    mutating func arrive(_ id: UInt64, count: Int) -> Episode.State.Arrival? {
        state.bodyArrived(id: id, count: count, now: now)
    }

    /// The writer stores `range` of fetch `id` (the bytes `arrive` brought):
    /// overlap bytes are held and compared with the cached ones (which the
    /// origin served again unchanged), the rest is written.
    @discardableResult
    mutating func write(_ id: UInt64, _ range: Range<Int64>) -> [Episode.State.ReadyRead] {
        let generation = state.generation
        guard let target = state.writeTarget(id: id, generation: generation, range: range, step: 8 * Self.mib)
        else { return [] }
        var rest = range
        if let check = target.check {
            _ = state.hold(
                id: id, generation: generation, range: check, bytes: Array(repeating: 0, count: check.count))
            rest = check.upperBound..<range.upperBound
        }
        var ready: [Episode.State.ReadyRead] = []
        if !rest.isEmpty {
            let none: [UInt8] = []
            ready = none.withUnsafeBytes { bytes in
                state.bodyWritten(
                    id: id, range: rest, generation: generation, written: true, bytes: bytes,
                    spillLimit: tuning.spillLimit)
            } ?? []
        }
        if !state.takeComparableOverlaps(written: rest.isEmpty ? nil : rest).isEmpty {
            _ = state.overlapMatched(generation: generation)
        }
        return ready
    }

    /// Fetch `id`'s transfer ended (`error` `nil`: its response ended) and,
    /// unless it is tried again, settles; returns what settling it asks.
    @discardableResult
    mutating func end(
        _ id: UInt64, error: FetchError? = nil, attempt: Int = 1, isBackground: Bool = false
    ) -> [Episode.State.Effect] {
        let (next, failure) = state.fetchEnded(id: id, error: error, attempt: attempt, tuning: tuning)
        guard case .ended = next else { return [] }
        return state.fetchSettled(
            id: id, failure: failure, isBackground: isBackground, minimumFetch: tuning.minimumFetch)
    }

    /// The bytes of `range` arrive and are written, as the bodies of the
    /// fetches of this version that bring them; each fetch that brought all
    /// it asks ends. Returns what the ends ask (a fill, say).
    @discardableResult
    mutating func land(_ range: Range<Int64>) -> [Episode.State.Effect] {
        var effects: [Episode.State.Effect] = []
        let bringing = state.fetches.filter { _, progress in
            progress.generation == state.generation && progress.cursor < progress.upper
                && range.contains(progress.cursor)
        }
        for (id, progress) in bringing.sorted(by: { $0.value.cursor < $1.value.cursor }) {
            let upper = min(progress.upper, range.upperBound)
            // Bytes that arrived before are written now, with the rest.
            if progress.received < upper, arrive(id, count: Int(upper - progress.received)) == nil { continue }
            write(id, progress.cursor..<upper)
            if let after = state.fetches[id], after.cursor >= after.upper { effects += end(id) }
        }
        return effects
    }

    // MARK: - Effects

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

    /// The probes and checks `effects` send.
    static func probes(_ effects: [Episode.State.Effect]) -> [Episode.State.ProbeStart] {
        effects.compactMap { effect in
            switch effect {
            case .probe(let probe), .check(let probe): probe
            default: nil
            }
        }
    }

    // MARK: - Starting states

    /// The index's record of the version, with `ranges` cached, pinned to
    /// the link that answers (as a response of an earlier mount left it).
    private func record(length: Int64?, ranges: [Range<Int64>]) -> EpisodeRecord {
        EpisodeRecord(
            id: 1, key: "e", url: Self.url, length: length, etag: etag, lastModified: lastModified, ranges: ranges,
            variant: EpisodeVariant(pinnedURL: length == nil ? nil : url))
    }

    /// Restored from the index at mount, then checked with the origin as a
    /// mount checks a recently read episode (one byte, `If-Range`): its
    /// head confirms the version, its byte lands. The index held `present`
    /// but for that byte (the last of the first run), so `present` is
    /// cached now. With nothing cached, the byte is evicted afterwards.
    private mutating func restoredAndChecked(length: Int64, present: [Range<Int64>]) {
        var restored = RangeSet(present)
        var evict = false
        if let first = present.first, first.lowerBound == 0 {
            restored.remove(first.upperBound - 1..<first.upperBound)
        } else {
            if !present.isEmpty { Issue.record("the check asks byte 0: a cached run must start there") }
            evict = true
        }
        state = Episode.State(restoring: record(length: length, ranges: restored.ranges))
        guard let check = state.startMountCheck() else {
            Issue.record("the mount checks a restored episode: \(state)")
            return
        }
        head(check.id, check.range)
        land(check.range)
        if evict {
            #expect(state.mayEvict)
            state.evicted()
        }
    }

    /// Nothing cached, and `handle` opened: its probe is the mount's first
    /// response; it tells the version and brings `present`.
    private mutating func firstResponse(length: Int64, present: [Range<Int64>], opening handle: UInt64?) {
        guard let probe = ReadBench.probes(open(handle ?? 1, feedLength: length)).first else {
            Issue.record("the open of an episode nothing is cached of sends a probe")
            return
        }
        #expect(present == [probe.range], "the first response brings \(probe.range), not \(present)")
        head(probe.id, probe.range, total: length)
        land(probe.range)
    }

    /// Restored from the index with `present`, and `handles` opened while
    /// the origin cannot be reached: each open's probe (or check) fails, and
    /// the cache answers.
    private mutating func offline(length: Int64, present: [Range<Int64>], handles: [UInt64]) {
        state = Episode.State(restoring: record(length: length, ranges: present))
        let unreachable = FetchError(isTransient: true, isUnreachable: true, message: "no route to host")
        for handle in handles {
            let effects = open(handle)
            for effect in effects {
                switch effect {
                case .probe(let probe): end(probe.id, error: unreachable)
                case .check(let check): end(check.id, error: unreachable, isBackground: true)
                default: break
                }
            }
        }
    }

    /// Files opened on an episode with no length known (the feed claimed
    /// one), whose probe found no episode: they stay open, nothing read.
    private mutating func unsized(handles: [UInt64]) {
        state = Episode.State(restoring: record(length: nil, ranges: []))
        var probe: Episode.State.ProbeStart?
        for handle in handles {
            probe = probe ?? ReadBench.probes(open(handle, feedLength: 1)).first
        }
        if let probe {
            let gone = FetchError(isTransient: false, isUnreachable: false, message: "HTTP 404")
            end(probe.id, error: gone)
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
        // Reader 1 plays on to 64 MiB, then closes its file.
        let size: Int64 = 128 * 1024
        for step: Int64 in 0..<6 { _ = bench.read(1, at: 64 * mib - (6 - step) * size) }
        #expect(bench.state.handles[1]?.streak == 5)
        _ = bench.state.release(handle: 1, now: bench.now - 1)
        _ = bench.read(2, at: 64 * mib)
        #expect(bench.state.handles[2]?.streak == 6)
        #expect(bench.state.lastStream == nil)
    }

    // MARK: - Guarantee 3: no mixed versions

    @Test func aHandleOfAReplacedVersionReadsEIO() throws {
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        // An hour on, another open asks the origin again: a new version.
        bench.now += bench.tuning.revalidateAfter
        let probe = try #require(ReadBench.probes(bench.open(2)).first)
        bench.head(probe.id, probe.range, etag: "\"v2\"")
        // File 1 reads bytes its version never had here.
        let effects = bench.read(at: 5 * mib)
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
        var bench = ReadBench(length: 10 * mib, present: [0..<10 * mib], confirmed: false)
        #expect(!bench.state.validated)
        let effects = bench.read(at: 5 * mib, size: 4096)
        #expect(ReadBench.served(effects) == [5 * mib..<5 * mib + 4096])
        #expect(ReadBench.fetched(effects).isEmpty)
        #expect(bench.state.waiters.isEmpty)
    }

    // MARK: - The open's probe

    @Test func aProvisionalHandleWaitsForTheFirstResponse() {
        // Nothing cached: the file opens while its probe is on its way.
        var bench = ReadBench(length: 10 * mib, handles: [], confirmed: false)
        bench.open(1, feedLength: 10 * mib)
        #expect(bench.state.handles[1]?.provisional == true)
        let probe = bench.state.fetches.keys.sorted()
        #expect(bench.read(at: 0).isEmpty)
        #expect(bench.state.earlyReads.count == 1)
        #expect(bench.state.fetches.keys.sorted() == probe, "no fetch but the probe")
    }
}

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

    @Test func aRetryAsksWhatIsLeftWhenItsDelayHasPassed() {
        // The reader waits for its first 8 KiB; 4 KiB of them came.
        var (bench, id) = benchWithFetch(arrived: 4096, read: 8192)
        let busy = OriginAnswer(status: 503, retryAfter: nil, now: now).failure(status: 503, url: "http://o/a")
        _ = bench.state.fetchEnded(id: id, error: busy, attempt: 1, tuning: EpisodeReader.Tuning())
        let upper = bench.state.fetches[id]!.upper
        #expect(bench.state.retryDue(id: id) == .launch(range: 4096..<upper, validator: "\"v1\"", url: ReadBench.url))
        // Meanwhile it yielded to the reader's jump: only what it kept (the
        // bytes the reader still waits for) is asked.
        _ = bench.read(at: 9 * mib, size: 4096)
        #expect(bench.state.fetches[id]?.upper == 8192)
        #expect(bench.state.retryDue(id: id) == .launch(range: 4096..<8192, validator: "\"v1\"", url: ReadBench.url))
        // It brought all it kept: nothing is asked, it is over.
        bench.arrive(id, count: 4096)
        bench.write(id, 4096..<8192)
        #expect(bench.state.retryDue(id: id) == .settle)
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
        #expect(bench.state.retryDue(id: id) == .settle)
        #expect(bench.state.fetches[id] == nil)
        #expect(bench.state.retryDue(id: id) == .settle, "a fetch already forgotten")
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
        guard case .ended = state.fetchEnded(id: id, error: unreachable, attempt: 1, tuning: EpisodeReader.Tuning()).0
        else {
            Issue.record("offline, the cache answers at once")
            return
        }
    }
}
