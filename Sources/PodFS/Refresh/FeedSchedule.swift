/// Which feed fetch starts next: the rule behind a round of feed fetches
/// (docs/DESIGN.md, "Feeds").
///
/// Pure: no clock, no lock, no I/O; time enters as an argument. It
/// guarantees that at most `limits.total` fetches run at once, at most
/// `limits.perHost` against one host (gPodder was banned by a host for
/// opening 199 connections at once), and that nothing is asked of a host
/// before the time its `Retry-After` named. Feeds start in the order they
/// were added, except that a feed whose host is busy or resting is passed
/// over for the next one: one slow or hanging host holds only its own
/// slots.
public struct FeedSchedule: Sendable, Equatable {
    // MARK: - Nested types

    /// How many fetches may run at once.
    public struct Limits: Sendable, Equatable {
        /// In all.
        public var total: Int
        /// Against one host (scheme, host and port).
        public var perHost: Int

        public init(total: Int, perHost: Int) {
            self.total = max(1, total)
            self.perHost = max(1, perHost)
        }

        /// What a mount uses: about what `curl --parallel` opens, and a
        /// per-host bound a CDN does not take for an attack.
        public static let standard = Limits(total: 48, perHost: 6)
    }

    /// What a worker does next.
    public enum Step: Sendable, Equatable {
        /// Fetch this feed (it now counts as running).
        case start(url: String, attempt: Int)
        /// Nothing may start now; ask again at this time at the latest
        /// (or when a fetch ends).
        case wait(until: Double)
        /// Nothing may start now and nothing waits for a time: ask again
        /// when a fetch ends.
        case waitForAFetch
        /// Every feed was fetched: the round is over.
        case done
    }

    private struct Item: Sendable, Equatable {
        var url: String
        var host: String
        var attempt: Int
        var notBefore: Double
    }

    // MARK: - Properties

    public let limits: Limits
    /// Feeds not started yet, in order.
    private var waiting: [Item] = []
    /// Running fetches by URL.
    private var running: [String: Item] = [:]
    private var runningPerHost: [String: Int] = [:]
    /// The time before which a host is not asked again (its `Retry-After`).
    private var hostRestsUntil: [String: Double] = [:]

    // MARK: - Init

    public init(urls: [String] = [], limits: Limits = .standard) {
        self.limits = limits
        for url in urls { add(url: url) }
    }

    // MARK: - Methods

    /// Fetches not yet ended (running or waiting).
    public var pendingCount: Int { waiting.count + running.count }

    /// Whether `url` waits or runs.
    public func isPending(_ url: String) -> Bool {
        running[url] != nil || waiting.contains { $0.url == url }
    }

    /// Adds a feed to fetch; one already waiting or running is not added
    /// twice.
    public mutating func add(url: String, notBefore: Double = 0, attempt: Int = 1) {
        guard !isPending(url) else { return }
        waiting.append(Item(url: url, host: Self.host(of: url), attempt: attempt, notBefore: notBefore))
    }

    /// The next thing to do at `now`: start the first waiting feed whose
    /// time has come and whose host has a free slot, if the total allows.
    public mutating func next(now: Double) -> Step {
        if waiting.isEmpty { return running.isEmpty ? .done : .waitForAFetch }
        guard running.count < limits.total else { return .waitForAFetch }
        var earliest: Double?
        for (position, item) in waiting.enumerated() {
            guard runningPerHost[item.host, default: 0] < limits.perHost else { continue }
            let time = max(item.notBefore, hostRestsUntil[item.host] ?? 0)
            if time > now {
                earliest = min(earliest ?? time, time)
                continue
            }
            waiting.remove(at: position)
            running[item.url] = item
            runningPerHost[item.host, default: 0] += 1
            return .start(url: item.url, attempt: item.attempt)
        }
        if let earliest { return .wait(until: earliest) }
        return .waitForAFetch
    }

    /// A fetch of `url` ended at `now`. A transient failure (`transient`)
    /// is tried again: after the `Retry-After` the origin sent, which also
    /// rests its whole host until then, else after a short backoff; not
    /// after `maxAttempts`, nor when the origin asks for longer than
    /// `longestWait` (the next refresh asks again). Returns when the retry
    /// is due, if there is one.
    @discardableResult
    public mutating func ended(
        url: String, now: Double, transient: Bool = false, retryAfter: Double? = nil, maxAttempts: Int = 3,
        longestWait: Double = 300
    ) -> Double? {
        guard let item = running.removeValue(forKey: url) else { return nil }
        let host = item.host
        let left = (runningPerHost[host] ?? 1) - 1
        runningPerHost[host] = left > 0 ? left : nil
        if let retryAfter, retryAfter > 0, retryAfter <= longestWait {
            hostRestsUntil[host] = max(hostRestsUntil[host] ?? 0, now + retryAfter)
        }
        guard transient, item.attempt < maxAttempts else { return nil }
        let delay = retryAfter ?? Self.backoff(attempt: item.attempt)
        guard delay <= longestWait else { return nil }
        add(url: url, notBefore: now + delay, attempt: item.attempt + 1)
        return now + delay
    }

    /// The wait before attempt `attempt + 1` when the origin named none:
    /// 1 s, 2 s, 4 s ...
    public static func backoff(attempt: Int) -> Double {
        Double(1 << min(max(attempt - 1, 0), 8))
    }

    /// What counts as one host for the per-host bound: the URL's scheme,
    /// host and port, lower-cased, without user information.
    public static func host(of url: String) -> String {
        var rest = Substring(url)
        var scheme = ""
        if let colon = rest.range(of: "://") {
            scheme = rest[..<colon.lowerBound].lowercased()
            rest = rest[colon.upperBound...]
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority
        return scheme + "://" + hostPort.lowercased()
    }
}
