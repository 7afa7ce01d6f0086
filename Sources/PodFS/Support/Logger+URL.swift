import Feeds
public import Logging

extension Logger.MetadataValue {
    /// A URL as a log line may show it (`FeedURL.redacted(_:for: .log)`):
    /// without its password, query and fragment, because people paste logs
    /// into bug reports.
    public static func url(_ url: String) -> Logger.MetadataValue {
        .string(FeedURL.redacted(url, for: .log))
    }
}
