/// Which episodes' sizes are asked of their origins, in what order and how
/// many at once (docs/DESIGN.md, "Real sizes"): the episodes whose feed
/// gives no length and whose origin never told it, newest first across
/// shows, `concurrent` at a time. Pure: the keeper's `Sizer` drives it.
///
/// A show's checks go one at a time until one is answered with its byte
/// (its host answers Range), then with the others. A show whose checks
/// fail `failuresBeforeRest` times in a row rests for `retry` seconds (a
/// dead host holds no check of another show), and so does one whose host
/// answered with a whole episode (it ignores Range: each check would cost
/// a response cut short) or proves nothing (no strong validator: no check
/// tells a size). A failed episode is asked again after `retry`, after the
/// episodes never asked: a show's newest that always fail (media not on
/// the host yet) do not keep the others from being asked.
struct SizeChecks {
    // MARK: - Nested types

    /// An episode whose size is unknown: its key, its show's identity and
    /// its publication time.
    struct Candidate: Equatable {
        var key: String
        var show: String
        var date: Int64
    }

    /// How a check ended.
    enum Answer {
        /// The size, with the byte asked for.
        case sized
        /// The size, from a response with the whole episode (cut short).
        case whole
        /// No size: the host sends no validator that proves a version.
        case unproven
        /// No size: an error, a refusal, or no answer in time.
        case failed
    }

    // MARK: - Properties

    /// Checks on their way at once: each is one round trip and one byte.
    static let concurrent = 4
    /// Failures in a row after which a show's checks rest.
    static let failuresBeforeRest = 3
    /// Seconds before a failed episode, or a resting show, is asked again.
    static let retry = 3600.0

    /// Candidates not asked yet, newest last (taken from the end).
    private(set) var waiting: [Candidate] = []
    /// Checks on their way, by key.
    private(set) var onTheirWay: [String: Candidate] = [:]
    private var failedUntil: [String: Double] = [:]
    private var restingUntil: [String: Double] = [:]
    private var failuresInARow: [String: Int] = [:]
    /// Shows whose host answered a check with its byte.
    private var proven: Set<String> = []

    // MARK: - Methods

    /// The episodes whose size is unknown now (the catalogue's): they wait
    /// in order, newest first, except those on their way.
    mutating func replan(_ candidates: [Candidate]) {
        waiting = candidates.filter { onTheirWay[$0.key] == nil }.sorted(by: Self.before)
    }

    /// The next check to send at `now`, if one may go: at most
    /// `concurrent` on their way, one a show until its host is proven; not
    /// an episode that failed, nor one of a resting show, within `retry`.
    mutating func next(now: Double) -> Candidate? {
        guard onTheirWay.count < Self.concurrent else { return nil }
        let proven = proven
        let busy = Set(onTheirWay.values.filter { !proven.contains($0.show) }.map(\.show))
        let (failed, resting) = (failedUntil, restingUntil)
        let may = { (candidate: Candidate) in
            Self.isDue(candidate, now: now, failed: failed, resting: resting) && !busy.contains(candidate.show)
        }
        guard
            let index = waiting.lastIndex(where: { failed[$0.key] == nil && may($0) })
                ?? waiting.lastIndex(where: may)
        else { return nil }
        let candidate = waiting.remove(at: index)
        onTheirWay[candidate.key] = candidate
        return candidate
    }

    /// The check of `key` ended at `now` with `answer`. Returns the show's
    /// identity when it starts to rest now.
    @discardableResult
    mutating func ended(_ key: String, _ answer: Answer, now: Double) -> String? {
        guard let candidate = onTheirWay.removeValue(forKey: key) else { return nil }
        let show = candidate.show
        switch answer {
        case .sized:
            proven.insert(show)
            failuresInARow[show] = nil
            return nil
        case .whole, .unproven:
            failuresInARow[show] = nil
            return rest(show, now: now)
        case .failed:
            failedUntil[key] = now + Self.retry
            // Asked again once `retry` has passed, in its turn.
            waiting.insert(candidate, at: waiting.firstIndex { Self.before(candidate, $0) } ?? waiting.endIndex)
            let failures = failuresInARow[show, default: 0] + 1
            guard failures >= Self.failuresBeforeRest else {
                failuresInARow[show] = failures
                return nil
            }
            failuresInARow[show] = nil
            return rest(show, now: now)
        }
    }

    /// Drops `key` from the checks on their way: nothing was asked (it was
    /// sized meanwhile, or opened).
    mutating func dropped(_ key: String) {
        onTheirWay[key] = nil
    }

    /// Whether nothing is on its way and nothing may be sent before `now`.
    func isIdle(now: Double) -> Bool {
        onTheirWay.isEmpty
            && !waiting.contains { Self.isDue($0, now: now, failed: failedUntil, resting: restingUntil) }
    }

    // MARK: - Private methods

    private mutating func rest(_ show: String, now: Double) -> String {
        proven.remove(show)
        restingUntil[show] = now + Self.retry
        return show
    }

    private static func isDue(
        _ candidate: Candidate, now: Double, failed: [String: Double], resting: [String: Double]
    ) -> Bool {
        (failed[candidate.key] ?? -.infinity) <= now && (resting[candidate.show] ?? -.infinity) <= now
    }

    /// Whether `a` is asked after `b` (`waiting`'s order): older, or of
    /// the same time with a later key.
    private static func before(_ a: Candidate, _ b: Candidate) -> Bool {
        (a.date, b.key) < (b.date, a.key)
    }
}
