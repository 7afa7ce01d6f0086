/// A `LinkEstimate` for each origin host. A library's shows sit on many
/// hosts, near and far, fast and slow: what one host's responses showed
/// says nothing of another's. With one estimate for the mount, a listener
/// on a slow host pulled a fast host's read-ahead down to its own rate,
/// and a far, fast host's windows went to a slow one (docs/DESIGN.md,
/// "Read-ahead").
///
/// Keyed by host (`host(of:)`, with its port). Most shows' enclosures go
/// through a tracking prefix (an analytics host that redirects: of the
/// enclosures in `Tests/Corpus/feeds`, 917 of 1,752 name podtrac) to CDNs
/// that differ from show to show. So each host has two estimates:
/// - **as a feed host** (the host of enclosure URLs): every response of
///   its shows' episodes, redirects and all, wherever they ended; what a
///   show's first request, which goes through the redirects, will meet;
/// - **its own**: the bodies it sent and the round trips of requests sent
///   to it straight (no redirect followed), nothing else
///   (`observe(latency:feed:answered:direct:)`).
///
/// An episode's read is sized by its pinned link's host's own estimate
/// once that host has a round trip of its own, else by its feed host's
/// (`estimate(feed:pinned:)`). At most `capacity` estimates are kept; the
/// one observed longest ago goes first.
///
/// Pure value; the reader's `Network` keeps one per mount behind a lock.
public struct LinkEstimates: Sendable {
    public init(capacity: Int = 512) {
        self.capacity = max(1, capacity)
    }

    // MARK: - Nested types

    /// A host as the estimates know it: a hash of its name, made from a
    /// URL without building the name, so a read event allocates nothing
    /// for it. `Host(url: u) == Host(name: LinkEstimates.host(of: u))`;
    /// two hosts whose 64-bit hashes met would share an estimate, which
    /// sizes reads and decides nothing else.
    public struct Host: Hashable, Sendable, ExpressibleByStringLiteral {
        private let hash: Int

        /// The host of `url` (`LinkEstimates.host(of:)`).
        public init(url: String) {
            var hasher = Hasher()
            LinkEstimates.forEachHostByte(of: url) { hasher.combine($0) }
            hash = hasher.finalize()
        }

        /// A host by its name as `LinkEstimates.host(of:)` gives it.
        public init(name: String) {
            var hasher = Hasher()
            for byte in name.utf8 { hasher.combine(byte) }
            hash = hasher.finalize()
        }

        public init(stringLiteral name: String) {
            self.init(name: name)
        }
    }

    // MARK: - Properties

    /// How many estimates it remembers (a host's own and as a feed host
    /// count apart).
    public var count: Int { estimates.count }

    /// An estimate's key: a host, and which of its two estimates.
    private struct Key: Hashable {
        var host: Host
        var asFeed: Bool
    }

    private let capacity: Int
    private var estimates: [Key: (estimate: LinkEstimate, used: UInt64)] = [:]
    /// Counts observations: the order in which estimates were last observed.
    private var clock: UInt64 = 0

    // MARK: - Methods

    /// What `host`'s own responses showed; unmeasured for a host never seen.
    public subscript(host: Host) -> LinkEstimate {
        estimates[Key(host: host, asFeed: false)]?.estimate ?? LinkEstimate()
    }

    /// What the responses of `host`'s shows' episodes showed, wherever
    /// their redirects ended.
    public subscript(feed host: Host) -> LinkEstimate {
        estimates[Key(host: host, asFeed: true)]?.estimate ?? LinkEstimate()
    }

    /// A response head from `host`, asked straight, arrived `seconds` after
    /// its request.
    public mutating func observe(latency seconds: Double, host: Host) {
        update(Key(host: host, asFeed: false)) { $0.observe(latency: seconds) }
    }

    /// `bytes` of body from `host` arrived in `seconds` after the head.
    public mutating func observe(bytes: Int64, in seconds: Double, host: Host) {
        update(Key(host: host, asFeed: false)) { $0.observe(bytes: bytes, in: seconds) }
    }

    /// A response head for an episode of `feed` (its enclosure URL's host)
    /// arrived `seconds` after its request, from `answered` (where the
    /// redirects, if any, ended; `direct`: none was followed). The feed
    /// host learns it as a feed host; the answering host as its own only
    /// when it was asked straight: a redirect's round trips, to another
    /// host or its own, are not one round trip to it.
    public mutating func observe(latency seconds: Double, feed: Host, answered: Host, direct: Bool) {
        update(Key(host: feed, asFeed: true)) { $0.observe(latency: seconds) }
        if direct { observe(latency: seconds, host: answered) }
    }

    /// `bytes` of body of an episode of `feed` arrived from `answered` in
    /// `seconds` after the head: the feed host learns it as a feed host,
    /// the answering host as its own.
    public mutating func observe(bytes: Int64, in seconds: Double, feed: Host, answered: Host) {
        update(Key(host: feed, asFeed: true)) { $0.observe(bytes: bytes, in: seconds) }
        observe(bytes: bytes, in: seconds, host: answered)
    }

    /// What sizes a read of an episode of `feed` whose requests go to
    /// `pinned` (`nil`: to the enclosure URL, through its redirects, if
    /// any): the pinned link's host's own estimate once it has a round trip
    /// of its own, else the feed host's. Nothing is mixed: a rate the
    /// pinned host has not told yet (its only request a 1-byte check, or
    /// only the keeper's fetches) is none, and its reads grow from the
    /// ramp (`ReadPlan.window`), as an unmeasured link's do. Another CDN's
    /// rate beside its own round trip could make a slow far link look far
    /// and fast (`ReadPlan.isFarAndFast`), with 64 MiB windows.
    public func estimate(feed: Host, pinned: Host?) -> LinkEstimate {
        if let pinned, let own = estimates[Key(host: pinned, asFeed: false)]?.estimate, own.latency != nil {
            return own
        }
        return self[feed: feed]
    }

    /// The host of an absolute URL, in lower case with its port, without
    /// user info: `"https://u:p@CDN.Example.org:8443/a.mp3"` gives
    /// `"cdn.example.org:8443"`. A text that is no absolute URL is its own
    /// key (it reaches no host, and shares no estimate with one).
    public static func host(of url: String) -> String {
        var name: [UInt8] = []
        forEachHostByte(of: url) { name.append($0) }
        return String(decoding: name, as: UTF8.self)
    }

    // MARK: - Private

    /// Calls `body` with each byte of `host(of: url)`, in order.
    private static func forEachHostByte(of url: String, _ body: (UInt8) -> Void) {
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[colon...].starts(with: "://".utf8)
        else { return bytes.forEach(body) }
        let start = bytes.index(colon, offsetBy: 3)
        var end = start
        var authorityStart = start
        while end < bytes.endIndex {
            let byte = bytes[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { authorityStart = bytes.index(after: end) }
            end = bytes.index(after: end)
        }
        // Host names are ASCII (IDNs come as punycode) and compare case-blind.
        for byte in bytes[authorityStart..<end] { body(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
    }

    private mutating func update(_ key: Key, _ change: (inout LinkEstimate) -> Void) {
        clock &+= 1
        var entry = estimates[key] ?? (LinkEstimate(), 0)
        change(&entry.estimate)
        entry.used = clock
        estimates[key] = entry
        if estimates.count > capacity, let oldest = estimates.min(by: { $0.value.used < $1.value.used })?.key {
            estimates[oldest] = nil
        }
    }
}
