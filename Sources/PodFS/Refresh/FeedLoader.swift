public import Feeds
import Foundation
public import Logging
public import RangeCache

/// Gets each feed from the network, or else the last good copy from the
/// cache, so a mount with no network still shows what it showed before.
///
/// Every GET is conditional on the kept copy's validators (`If-None-Match`,
/// `If-Modified-Since`) and accepts gzip. Only a copy that parses replaces
/// the kept one: a feed that breaks keeps its previous listing.
public struct FeedLoader: Sendable {
    // MARK: - Nested types

    /// What happened to one SOURCE feed at mount time.
    public enum Outcome: Sendable {
        /// The origin's copy (or the kept one, when the origin said it is
        /// current).
        case fresh(ParsedFeed)
        case cached(ParsedFeed, reason: String)
        case failed(reason: String)
    }

    /// What a refresh of a feed found.
    public enum RefreshOutcome: Sendable {
        /// A new copy that parses; `kept`: whether it replaced the kept
        /// copy (a full disk can refuse it). A show built later from the
        /// kept copy would find an older copy or none, so one not kept is
        /// built from `feed`.
        case updated(ParsedFeed, kept: Bool)
        /// `304 Not Modified`, or the same bytes as the kept copy.
        case notModified
        /// Nothing usable: why, in words for the log and `podfs status`;
        /// whether asking again soon may help, and when the origin said
        /// to (`Retry-After`, seconds).
        case failed(reason: String, isTransient: Bool = false, retryAfter: Double? = nil)
    }

    // MARK: - Properties

    /// How the reason of a body that is no feed begins.
    public static let doesNotParse = "the feed does not parse"

    /// The reason of a feed cut off by its server.
    static let endsEarly = "the feed stops before its end, as if its server cut it off"

    private let source: any FeedSource
    private let index: CacheIndex
    /// Where moved feeds live now; `nil`: moves are not remembered.
    private let moves: FeedMoves?
    private let logger: Logger

    // MARK: - Init

    public init(source: any FeedSource, index: CacheIndex, moves: FeedMoves? = nil, logger: Logger) {
        self.source = source
        self.index = index
        self.moves = moves
        self.logger = logger
    }

    // MARK: - Methods

    /// Loads one feed at mount time. A fresh copy that parses replaces the
    /// stored one; a copy that fails to download or parse falls back to the
    /// stored one.
    public func load(url: String) -> Outcome {
        let stored = storedCopy(url: url)
        // The kept copy is parsed only when it is needed: after a 304, or
        // when the origin's copy cannot be had.
        let storedFeed = { () -> ParsedFeed? in stored.flatMap { try? FeedParser.parse($0.body, baseURL: url) } }
        let reason: String
        switch fetch(url: url, validators: stored.map { FeedValidators(etag: $0.etag, lastModified: $0.lastModified) }, stored: stored) {
        case .updated(let feed, _):
            return .fresh(feed)
        case .notModified:
            if let feed = storedFeed() { return .fresh(feed) }
            // The origin confirmed a copy that no longer parses (a damaged
            // index, an older parser's copy): ask for the whole feed.
            if case .updated(let feed, _) = fetch(url: url, validators: nil, stored: nil) { return .fresh(feed) }
            reason = "the origin said the feed did not change, but the kept copy does not parse"
        case .failed(let why, _, _):
            reason = why
        }
        if let feed = storedFeed() {
            logger.warning(
                "using the last good copy of the feed", metadata: ["feed.url": .url(url), "reason": "\(reason)"])
            return .cached(feed, reason: reason)
        }
        if stored != nil {
            logger.error("the stored copy of the feed is unusable", metadata: ["feed.url": .url(url)])
        }
        return .failed(reason: reason)
    }

    /// Fetches a feed again, conditionally on the kept copy unless
    /// `conditional` is false (a feed the mount does not show yet: its kept
    /// copy, if any, did not parse). The mount keeps its listing unless
    /// this returns `.updated`.
    public func refresh(url: String, conditional: Bool = true) -> RefreshOutcome {
        let stored = conditional ? storedCopy(url: url) : nil
        let validators = stored.map { FeedValidators(etag: $0.etag, lastModified: $0.lastModified) }
        return fetch(url: url, validators: validators, stored: stored)
    }

    /// The kept copy of a feed, parsed; `nil` when there is none or it no
    /// longer parses. What a mount shows at once, before any fetch
    /// (docs/DESIGN.md, "Feeds": kept copies serve at once).
    public func kept(url: String) -> ParsedFeed? {
        guard let stored = storedCopy(url: url) else { return nil }
        do {
            return try FeedParser.parse(stored.body, baseURL: moves?.location(of: url) ?? url)
        } catch {
            logger.warning(
                "the kept copy of the feed does not parse; waiting for the origin's",
                metadata: ["feed.url": .url(url), "error": "\(error.message)"])
            return nil
        }
    }

    // MARK: - Private methods

    private func storedCopy(url: String) -> StoredFeed? {
        do {
            return try index.feedBody(url: url)
        } catch {
            logger.error("could not read the kept copy of the feed", metadata: ["feed.url": .url(url), "error": "\(error)"])
            return nil
        }
    }

    /// One conditional GET; a body that parses is kept with its validators.
    /// `url` is the feed as subscribed: it is fetched where it lives now
    /// (`FeedMoves`), and kept under its own URL, so a move keeps the
    /// show's folder and cache.
    private func fetch(url: String, validators: FeedValidators?, stored: StoredFeed?) -> RefreshOutcome {
        let location = moves?.location(of: url) ?? url
        let answer: FeedAnswer
        do {
            answer = try source.fetchFeed(
                url: location, validators: validators?.isEmpty == false ? validators : nil, subscribedAs: url)
        } catch {
            return .failed(
                reason: "the feed could not be fetched: \(error.message)",
                isTransient: error.isTransient && !error.isUnreachable, retryAfter: error.retryAfter)
        }
        if let moved = answer.movedTo, moved != location {
            remember(url: url, movedTo: moved, because: "it answered with a permanent redirect (301 or 308)")
        }
        guard case .body(var body, var etag, var lastModified) = answer.response else { return .notModified }
        if let stored, stored.body == body {
            // Same bytes (an origin without validators): only the validators
            // and the time are news.
            save(url: url, body: body, etag: etag, lastModified: lastModified)
            return .notModified
        }
        var feed: ParsedFeed
        do {
            feed = try FeedParser.parse(body, baseURL: location)
        } catch {
            return .failed(reason: "\(Self.doesNotParse): \(error.message)")
        }
        if feed.endsEarly {
            // Cut off by its server: the episodes past the cut would leave
            // the listing, and the cut copy would replace the whole one.
            // One with a whole kept copy keeps it, and so does one whose
            // kept copy, cut too, holds more; one with none, or with a
            // kept copy cut shorter, is shown as far as it goes.
            if let stored, let kept = try? FeedParser.parse(stored.body, baseURL: location),
                !kept.endsEarly || kept.episodes.count > feed.episodes.count
            {
                return .failed(
                    reason: "\(Self.endsEarly) (\(feed.episodes.count) whole episodes before the cut)",
                    isTransient: true)
            }
            logger.warning(
                "the feed ends before its last element; showing the episodes before the cut",
                metadata: ["feed.url": .url(url), "episodes": "\(feed.episodes.count)"])
        }
        let here = answer.movedTo ?? location
        if let next = feed.newFeedURL, next != here, next != location,
            let moved = follow(newFeedURL: next, of: url)
        {
            (feed, body, etag, lastModified) = moved
        }
        let kept = save(url: url, body: body, etag: etag, lastModified: lastModified)
        return .updated(feed, kept: kept)
    }

    /// Fetches the `itunes:new-feed-url` of the feed subscribed as `url`;
    /// when it answers with a feed that parses, that is the feed from now
    /// on. Anything else leaves the feed where it was.
    private func follow(
        newFeedURL next: String, of url: String
    ) -> (ParsedFeed, [UInt8], etag: String?, lastModified: String?)? {
        do {
            let answer = try source.fetchFeed(url: next, validators: nil, subscribedAs: url)
            guard case .body(let body, let etag, let lastModified) = answer.response else { return nil }
            let feed = try FeedParser.parse(body, baseURL: answer.movedTo ?? next)
            remember(url: url, movedTo: answer.movedTo ?? next, because: "its itunes:new-feed-url leads to a feed")
            return (feed, body, etag, lastModified)
        } catch {
            logger.warning(
                "the feed names a new URL that gives no feed; staying where it is",
                metadata: ["feed.url": .url(url), "feed.new_url": .url(next), "error": "\(error)"])
            return nil
        }
    }

    private func remember(url: String, movedTo newURL: String, because reason: String) {
        logger.notice(
            "the feed moved; fetching it from the new URL from now on (its folder and cache stay)",
            metadata: ["feed.url": .url(url), "feed.new_url": .url(newURL), "reason": "\(reason)"])
        if let problem = moves?.record(url: url, movedTo: newURL) {
            logger.warning("could not remember the feed's move", metadata: ["error": "\(problem)"])
        }
    }

    /// Keeps `body` as the feed's copy; returns whether it was kept. One
    /// not kept costs only the copy: the feed in hand is still shown.
    @discardableResult
    private func save(url: String, body: [UInt8], etag: String?, lastModified: String?) -> Bool {
        do {
            try index.saveFeedBody(
                url: url, body: body, etag: etag, lastModified: lastModified,
                fetchedAt: Int64(Date().timeIntervalSince1970))
            return true
        } catch {
            logger.warning("could not keep a copy of the feed", metadata: ["feed.url": .url(url), "error": "\(error)"])
            return false
        }
    }
}
