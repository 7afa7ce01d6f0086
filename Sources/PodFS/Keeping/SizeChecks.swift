/// Which episodes' sizes are asked of their origins, in what order and how
/// many at once (docs/DESIGN.md, "Real sizes"): the episodes whose feed
/// gives no length and whose origin never told it, newest first across
/// shows, `concurrent` at a time. A show whose checks fail
/// `failuresBeforeRest` times in a row rests for `retry` seconds (a dead
/// host holds no check of any other show), and a failed episode is asked
/// again after `retry` seconds. Pure: the keeper's `Sizer` drives it.
struct SizeChecks {
    // MARK: - Nested types

    /// An episode whose size is unknown: its key, its show's identity and
    /// its publication time.
    struct Candidate: Equatable {
        var key: String
        var show: String
        var date: Int64
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

    // MARK: - Methods

    /// The episodes whose size is unknown now (the catalogue's): they wait
    /// in order, newest first, except those on their way.
    mutating func replan(_ candidates: [Candidate]) {
        waiting = candidates.filter { onTheirWay[$0.key] == nil }
            .sorted(by: Self.before)
    }

    /// The next check to send at `now`, if one may go: at most
    /// `concurrent` on their way; not an episode that failed, nor one of a
    /// resting show, within `retry` seconds.
    mutating func next(now: Double) -> Candidate? {
        guard onTheirWay.count < Self.concurrent else { return nil }
        guard
            let index = waiting.lastIndex(where: { candidate in
                (failedUntil[candidate.key] ?? -.infinity) <= now
                    && (restingUntil[candidate.show] ?? -.infinity) <= now
            })
        else { return nil }
        let candidate = waiting.remove(at: index)
        onTheirWay[candidate.key] = candidate
        return candidate
    }

    /// The check of `key` ended at `now`: `sized` when its length is known.
    /// Returns the show's identity when it starts to rest now.
    @discardableResult
    mutating func ended(_ key: String, sized: Bool, now: Double) -> String? {
        guard let candidate = onTheirWay.removeValue(forKey: key) else { return nil }
        if sized {
            failuresInARow[candidate.show] = nil
            failedUntil[key] = nil
            return nil
        }
        failedUntil[key] = now + Self.retry
        // Asked again once `retry` has passed, in its turn.
        waiting.insert(candidate, at: waiting.firstIndex { Self.before(candidate, $0) } ?? waiting.endIndex)
        let failures = failuresInARow[candidate.show, default: 0] + 1
        guard failures >= Self.failuresBeforeRest else {
            failuresInARow[candidate.show] = failures
            return nil
        }
        failuresInARow[candidate.show] = nil
        restingUntil[candidate.show] = now + Self.retry
        return candidate.show
    }

    /// Whether `a` is asked after `b` (`waiting`'s order): older, or of
    /// the same time with a later key.
    private static func before(_ a: Candidate, _ b: Candidate) -> Bool {
        (a.date, b.key) < (b.date, a.key)
    }

    /// Whether nothing is on its way and nothing may be sent before `now`.
    func isIdle(now: Double) -> Bool {
        guard onTheirWay.isEmpty else { return false }
        return !waiting.contains { candidate in
            (failedUntil[candidate.key] ?? -.infinity) <= now && (restingUntil[candidate.show] ?? -.infinity) <= now
        }
    }
}
