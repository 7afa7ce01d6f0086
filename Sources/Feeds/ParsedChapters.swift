/// A `<podcast:chapters>` link of an episode (Podcasting 2.0 namespace).
///
/// The URL is an absolute http(s) URL checked like an enclosure URL.
public struct ParsedChapters: Sendable, Equatable {
    // MARK: - Properties

    public var url: String

    /// MIME type, normally `application/json+chapters`, lowercased; `nil`
    /// when missing.
    public var type: String?

    // MARK: - Init

    public init(url: String, type: String? = nil) {
        self.url = url
        self.type = type
    }
}
