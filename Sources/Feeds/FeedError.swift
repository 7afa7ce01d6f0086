/// Why a feed or source list could not be read, in words a person can act on.
public struct FeedError: Error, Sendable, CustomStringConvertible {
    // MARK: - Properties

    /// What went wrong, for example "not a feed: the root element is <html>".
    public var message: String

    public var description: String { message }

    // MARK: - Init

    public init(_ message: String) {
        self.message = message
    }
}
