import Dispatch
import Feeds
import HTTPClient
import Locking

/// Turns what a user gives `podfs subscribe` into a feed: a feed URL as
/// it is, or a show's web page through the feeds its head links
/// (`<link rel="alternate" type="application/rss+xml">`), as podcast apps
/// do. Rules only: the fetches are the caller's (the mount's loader, or
/// the command's own client when no mount runs), so tests need no network.
///
/// A link is written by the page's server, so it is fetched under that
/// server's address zone: a public page cannot send podfs to loopback or
/// the LAN (docs/DESIGN.md, guarantee 6).
struct SubscriptionResolver: Sendable {
    // MARK: - Nested types

    /// A feed fetched and parsed.
    enum Loaded {
        case feed(ParsedFeed)
        /// It answered, but with something that does not parse as a feed.
        case notAFeed(reason: String)
        /// It could not be fetched (a 404, a dead host, ...).
        case failed(reason: String)
    }

    /// A document fetched as it is, and the zone it came from.
    enum Page {
        case body([UInt8], zone: AddressZone?)
        case failed(reason: String)
    }

    /// The feed a SOURCE leads to.
    struct Found {
        var url: String
        var feed: ParsedFeed
        /// The page it was found on, if any, and the zone that page came
        /// from: the feed is fetched under it from then on.
        var page: String?
        var pageZone: AddressZone?
    }

    /// Why a SOURCE gives no feed, as a sentence that names it.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: - Properties

    /// At most this many of a page's feed links are tried.
    static let linksTried = 4
    /// The most feeds one command may add (an OPML of a few hundred shows
    /// is common; a file of more is split, or mounted as a SOURCE).
    static let mostAtOnce = 2_000
    /// How many SOURCEs are fetched at once.
    static let workers = 6

    /// Fetches and parses the feed at a URL (and keeps it, in a mount).
    let load: @Sendable (String) -> Loaded
    /// Fetches a document under the zone of whoever wrote its URL.
    let fetch: @Sendable (_ url: String, _ issuer: URLIssuer) -> Page

    // MARK: - Methods

    func resolve(_ url: String) -> Result<Found, Failure> {
        let shown = FeedURL.redacted(url, for: .log)
        let notAFeed: String
        switch load(url) {
        case .feed(let feed): return .success(Found(url: url, feed: feed, page: nil, pageZone: nil))
        case .failed(let reason): return .failure(Failure(description: "\(shown): \(reason)"))
        case .notAFeed(let reason): notAFeed = reason
        }
        guard case .body(let body, let zone) = fetch(url, .user), Self.looksLikeHTML(body) else {
            return .failure(Failure(description: "\(shown) is not a feed: \(notAFeed)"))
        }
        let links = FeedLinkDiscovery.feedLinks(inHTML: body, base: url)
        guard !links.isEmpty else {
            return .failure(
                Failure(
                    description: "\(shown) is a web page that links no feed (no <link rel=\"alternate\" "
                        + "type=\"application/rss+xml\">); give the show's feed URL instead"))
        }
        var reasons: [String] = []
        for link in links.prefix(Self.linksTried) {
            switch follow(link, from: zone) {
            case .success(let feed):
                return .success(Found(url: link, feed: feed, page: url, pageZone: zone ?? .global))
            case .failure(let failure): reasons.append("\(FeedURL.redacted(link, for: .log)): \(failure.reason)")
            }
        }
        return .failure(
            Failure(description: "\(shown) links no feed that loads: " + reasons.joined(separator: "; ")))
    }

    /// Resolves every URL, `workers` at a time; the results in the order
    /// given.
    func resolveAll(_ urls: [String]) -> [Result<Found, Failure>] {
        let results = Locked<[Int: Result<Found, Failure>]>([:])
        let workers = max(1, min(Self.workers, urls.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for position in stride(from: worker, to: urls.count, by: workers) {
                let result = resolve(urls[position])
                results.withLock { $0[position] = result }
            }
        }
        let byPosition = results.withLock { $0 }
        return urls.indices.map { byPosition[$0]! }
    }

    /// Whether `body` is a web page rather than a broken feed.
    static func looksLikeHTML(_ body: [UInt8]) -> Bool {
        let head = String(decoding: body.prefix(4096), as: UTF8.self).lowercased()
        return head.contains("<!doctype html") || head.contains("<html") || head.contains("<head")
    }

    // MARK: - Private methods

    /// A page's link: fetched as the page's server wrote it (its zone),
    /// then loaded as a subscription once it proves to be a feed.
    private func follow(_ link: String, from zone: AddressZone?) -> Result<ParsedFeed, LinkFailure> {
        switch fetch(link, .server(zone ?? .global)) {
        case .failed(let reason):
            return .failure(LinkFailure(reason))
        case .body(let body, _):
            do {
                _ = try FeedParser.parse(body, baseURL: link)
            } catch {
                return .failure(LinkFailure("not a feed: \(error.message)"))
            }
        }
        switch load(link) {
        case .feed(let feed): return .success(feed)
        case .failed(let reason), .notAFeed(let reason): return .failure(LinkFailure(reason))
        }
    }

    private struct LinkFailure: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
