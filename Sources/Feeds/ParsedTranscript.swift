/// A `<podcast:transcript>` link of an episode (Podcasting 2.0 namespace).
///
/// The URL is an absolute http(s) URL checked like an enclosure URL; the
/// other fields are as declared, trimmed, with the type lowercased.
public struct ParsedTranscript: Sendable, Equatable {
    // MARK: - Properties

    public var url: String

    /// MIME type such as `text/vtt`, `application/x-subrip`,
    /// `application/json` or `text/html`; `nil` when missing.
    public var type: String?

    /// Language tag such as `en` or `de-AT`; `nil` when missing.
    public var language: String?

    /// `captions` when the file is meant as closed captions; `nil` when
    /// missing.
    public var rel: String?

    // MARK: - Init

    public init(url: String, type: String? = nil, language: String? = nil, rel: String? = nil) {
        self.url = url
        self.type = type
        self.language = language
        self.rel = rel
    }
}
