public import ReadRules
/// Fetches whole feed documents (the HTTP client implements it).
public protocol FeedSource: Sendable {
    /// The feed body; throws when it cannot be had now.
    func fetchFeed(url: String) throws(FetchError) -> [UInt8]
    /// A conditional GET (`If-None-Match`, `If-Modified-Since`) with gzip
    /// accepted; throws when the feed cannot be had now.
    func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse
    /// The same, for the feed subscribed as `subscribedAs` (its address
    /// zone is known under that URL too), saying where the feed moved if
    /// every redirect on the way was permanent (301, 308).
    func fetchFeed(url: String, validators: FeedValidators?, subscribedAs: String) throws(FetchError) -> FeedAnswer
}
