import PodFS

/// One podcast a directory search found: enough to recognise it and the
/// feed URL to mount it by.
///
/// The feed URL is always an absolute http(s) URL (`FeedURL.resolveHTTP`
/// accepted it); the other fields are as the directory gave them, trimmed,
/// and `nil` when it gave none that fits. Nothing here is cleaned for a
/// terminal: `text` does that, and the JSON output escapes what a terminal
/// would act on.
struct DirectoryMatch: Sendable, Equatable {
    // MARK: - Properties

    /// The show's name (`collectionName`, else `trackName`).
    var title: String?
    /// Who makes it (`artistName`).
    var author: String?
    /// How many episodes the directory counts (`trackCount`).
    var episodeCount: Int?
    /// The feed to give `podfs mount` (`feedUrl`).
    var feedURL: String

    /// Two lines for a terminal, the second the feed URL alone:
    /// `Title (Author, 12 episodes)` and `  https://...`. Every field is
    /// cleaned (`TerminalText`), so a directory's text cannot move the
    /// cursor or reorder what is shown.
    var text: String {
        var details: [String] = []
        if let author { details.append(TerminalText.clean(author)) }
        if let episodeCount { details.append(episodeCount == 1 ? "1 episode" : "\(episodeCount) episodes") }
        var line = title.map { TerminalText.clean($0) } ?? "(no title)"
        if !details.isEmpty { line += " (" + details.joined(separator: ", ") + ")" }
        return line + "\n  " + TerminalText.clean(feedURL) + "\n"
    }
}

// MARK: - Encodable

extension DirectoryMatch: Encodable {
    private enum CodingKeys: String, CodingKey {
        case title, author, episodeCount, feedURL
    }

    /// Every key, `null` where the directory gave nothing: a script reads
    /// the same shape for every match.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(title, forKey: .title)
        try container.encode(author, forKey: .author)
        try container.encode(episodeCount, forKey: .episodeCount)
        try container.encode(feedURL, forKey: .feedURL)
    }
}
