import Foundation
import HTTPClient
import Locking
import PodFS

/// Remembers who wrote each URL the reader fetches, so an episode's bytes
/// are fetched under its feed's address zone (docs/DESIGN.md, guarantee 6).
///
/// A feed's zone is the zone of the address its body actually came from
/// (after redirects, through DNS), recorded when it is fetched. An episode's
/// enclosure URL is issued by its feed (the reader says which: `ListedBy`,
/// carried by the episode, not a map of every URL of the mount); a URL the
/// reader learnt from a redirect is issued by the server that redirected. A
/// URL nobody vouched for is treated as coming from a public server: the
/// strictest rule, so a forgotten registration can only make a fetch fail,
/// never reach further.
final class FeedZones: Sendable {
    // MARK: - Nested types

    /// Guarded by `state`'s lock.
    private struct State {
        /// Feed URL -> the zone its last fetched copy came from.
        var feedZone: [String: AddressZone] = [:]
        /// URL learnt from a redirect -> the server zone that sent it there.
        var redirected: [String: URLIssuer] = [:]
        /// Feed URL a sync server listed -> that server's zone.
        var listedByServer: [String: AddressZone] = [:]
    }

    // MARK: - Properties

    private let policy: AddressPolicy
    /// Who sent podfs to a link pinned in an earlier mount (the index's
    /// `pinned_issuer`), by URL, as `AddressZone`'s raw value.
    private let pinnedIssuer: @Sendable (String) -> String?
    private let state = Locked(State())

    // MARK: - Init

    init(policy: AddressPolicy, pinnedIssuer: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.policy = policy
        self.pinnedIssuer = pinnedIssuer
    }

    // MARK: - Methods

    /// A copy of `feedURL` was fetched from an address in `zone`.
    func recordFeed(url feedURL: String, zone: AddressZone) {
        state.withLock { $0.feedZone[feedURL] = zone }
    }

    /// A fetch of some URL was redirected to `effectiveURL` by a server in
    /// `issuer`'s zone; the reader will ask for it directly next time.
    func recordRedirect(effectiveURL: String, issuer: URLIssuer) {
        guard case .server = issuer else { return }
        state.withLock { $0.redirected[effectiveURL] = issuer }
    }

    /// The feed at `url` was named by a server in `zone` (a page's link, a
    /// sync server's list; `FeedIssuers`): it is fetched under that zone, as
    /// an enclosure is under its feed's. `nil`: the user named it.
    func feedListed(url: String, byServerIn zone: AddressZone?) {
        state.withLock { $0.listedByServer[url] = zone }
    }

    /// Who wrote the feed URL `url`: the user, unless a sync server listed
    /// it.
    func issuer(ofFeed url: String) -> URLIssuer {
        state.withLock { $0.listedByServer[url] }.map { .server($0) } ?? .user
    }

    /// Who wrote `url`, as far as the zone rule is concerned: its feed when
    /// it is the URL `listedBy` says the feed listed (an enclosure, a
    /// cover, a transcript), unless a redirect sent podfs there too.
    func issuer(of url: String, listedBy: ListedBy?) -> URLIssuer {
        let feedURL = listedBy.flatMap { $0.url == url ? $0.feedURL : nil }
        let (redirected, zone) = state.withLock { state in
            (state.redirected[url], feedURL.flatMap { state.feedZone[$0] })
        }
        if let redirected { return redirected }
        if let zone { return .server(zone) }
        // A link pinned in an earlier mount keeps the zone of the server
        // that redirected there (docs/DESIGN.md, "Episodes and their
        // variants"), remembered from then on.
        if feedURL == nil, let raw = pinnedIssuer(url), let pinned = AddressZone(rawValue: raw) {
            state.withLock { $0.redirected[url] = .server(pinned) }
            return .server(pinned)
        }
        guard let feedURL else { return .server(.global) }
        // A feed shown from the cache (its origin was unreachable at mount)
        // was not fetched in this mount: its zone is where its URL leads
        // now. Remembered until a fetch of the feed says otherwise.
        let resolved = zoneOfHost(feedURL: feedURL)
        state.withLock { state in
            if state.feedZone[feedURL] == nil { state.feedZone[feedURL] = resolved }
        }
        return .server(resolved)
    }

    // MARK: - Private methods

    /// The zone of the feed URL's host: a literal address's, or the one
    /// zone every DNS answer shares; mixed answers or none count as public
    /// (the strictest).
    private func zoneOfHost(feedURL: String) -> AddressZone {
        guard var host = AddressPolicy.host(of: feedURL) else { return .global }
        if let address = IPAddress(numeric: host) { return policy.zone(of: address) }
        if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return .global }
        defer { freeaddrinfo(list) }
        var zones = Set<AddressZone>()
        var entry = list
        while let current = entry {
            if let address = Self.address(current.pointee) { zones.insert(policy.zone(of: address)) }
            entry = current.pointee.ai_next
        }
        return zones.count == 1 ? zones.first! : .global
    }

    private static func address(_ info: addrinfo) -> IPAddress? {
        guard let socketAddress = info.ai_addr else { return nil }
        switch info.ai_family {
        case AF_INET:
            return socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                IPAddress(bytes: withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
            }
        case AF_INET6:
            return socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                IPAddress(bytes: withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
            }
        default:
            return nil
        }
    }
}
