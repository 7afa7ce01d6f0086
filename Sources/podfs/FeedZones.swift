import HTTPClient
import Locking

/// Remembers who wrote each URL the reader fetches, so an episode's bytes
/// are fetched under its feed's address zone (DESIGN.md, guarantee 6).
///
/// A feed's zone is the zone of the address its body actually came from
/// (after redirects, through DNS), recorded when it is fetched. An episode's
/// enclosure URL is issued by its feed; a URL the reader learnt from a
/// redirect is issued by the server that redirected. A URL nobody vouched
/// for is treated as coming from a public server: the strictest rule, so a
/// forgotten registration can only make a fetch fail, never reach further.
final class FeedZones: Sendable {
    // MARK: - Nested types

    /// Guarded by `state`'s lock.
    private struct State {
        /// Feed URL -> the zone its last fetched copy came from.
        var feedZone: [String: AddressZone] = [:]
        /// Enclosure (or cover, transcript) URL -> the feed that lists it.
        var feedOf: [String: String] = [:]
        /// URL learnt from a redirect -> the server zone that sent it there.
        var redirected: [String: URLIssuer] = [:]
    }

    // MARK: - Properties

    private let policy: AddressPolicy
    private let state = Locked(State())

    // MARK: - Init

    init(policy: AddressPolicy) {
        self.policy = policy
    }

    // MARK: - Methods

    /// A copy of `feedURL` was fetched from an address in `zone`.
    func recordFeed(url feedURL: String, zone: AddressZone) {
        state.withLock { $0.feedZone[feedURL] = zone }
    }

    /// `urls` come from the feed at `feedURL`. Call again for URLs a
    /// refresh adds.
    func adopt(urls: [String], feedURL: String) {
        state.withLock { state in
            for url in urls { state.feedOf[url] = feedURL }
        }
    }

    /// A fetch of some URL was redirected to `effectiveURL` by a server in
    /// `issuer`'s zone; the reader will ask for it directly next time.
    func recordRedirect(effectiveURL: String, issuer: URLIssuer) {
        guard case .server = issuer else { return }
        state.withLock { $0.redirected[effectiveURL] = issuer }
    }

    /// Who wrote `url`, as far as the zone rule is concerned.
    func issuer(of url: String) -> URLIssuer {
        let (redirected, feedURL, zone) = state.withLock { state in
            let feedURL = state.feedOf[url]
            return (state.redirected[url], feedURL, feedURL.flatMap { state.feedZone[$0] })
        }
        if let redirected { return redirected }
        if let zone { return .server(zone) }
        // A feed shown from the cache (offline at mount) was not fetched in
        // this mount: a literal address in its URL still says its zone.
        if let feedURL, case .allowed(let literal) = policy.check(url: feedURL, from: .user) {
            return .server(literal)
        }
        return .server(.global)
    }
}
