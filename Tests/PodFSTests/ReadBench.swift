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
        guard case .settle = next else { return [] }
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

/// What a due retry asks (`Effect.launch`), to compare.
struct Launched: Equatable {
    var range: Range<Int64>
    var validator: String?
    var url: String?
}

extension Episode.State.Effect {
    /// What it asks, if it is a `.launch`.
    var launched: Launched? {
        if case .launch(let range, let validator, let url) = self { return Launched(range: range, validator: validator, url: url) }
        return nil
    }

    /// Whether it settles the fetch that ended.
    var settles: Bool {
        if case .settle = self { return true }
        return false
    }
}
