public import Feeds
import Foundation
public import Logging
public import RangeCache

/// Gets each feed from the network, or else the last good copy from the
/// cache, so a mount with no network still shows what it showed before.
public struct FeedLoader: Sendable {
    // MARK: - Nested types

    /// What happened to one SOURCE feed.
    public enum Outcome: Sendable {
        case fresh(ParsedFeed)
        case cached(ParsedFeed, reason: String)
        case failed(reason: String)
    }

    // MARK: - Properties

    private let source: any FeedSource
    private let index: CacheIndex
    private let logger: Logger

    // MARK: - Init

    public init(source: any FeedSource, index: CacheIndex, logger: Logger) {
        self.source = source
        self.index = index
        self.logger = logger
    }

    // MARK: - Methods

    /// Loads one feed. A fresh copy that parses replaces the stored one; a
    /// copy that fails to download or parse falls back to the stored one.
    public func load(url: String) -> Outcome {
        let reason: String
        do {
            let body = try source.fetchFeed(url: url)
            do {
                let feed = try FeedParser.parse(body, baseURL: url)
                do {
                    try index.saveFeedBody(
                        url: url, body: body, etag: nil, lastModified: nil,
                        fetchedAt: Int64(Date().timeIntervalSince1970))
                } catch {
                    logger.warning("could not keep a copy of the feed", metadata: ["feed.url": "\(url)", "error": "\(error)"])
                }
                return .fresh(feed)
            } catch {
                reason = "the feed does not parse: \(error.message)"
            }
        } catch {
            reason = "the feed could not be fetched: \(error.message)"
        }
        do {
            if let stored = try index.feedBody(url: url) {
                let feed = try FeedParser.parse(stored.body, baseURL: url)
                logger.warning(
                    "using the last good copy of the feed", metadata: ["feed.url": "\(url)", "reason": "\(reason)"])
                return .cached(feed, reason: reason)
            }
        } catch {
            logger.error("the stored copy of the feed is unusable", metadata: ["feed.url": "\(url)", "error": "\(error)"])
        }
        return .failed(reason: reason)
    }
}
