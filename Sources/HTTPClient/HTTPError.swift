internal import Feeds

/// Why a transfer failed, with a message a person can act on.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this was; decides whether a retry may help.
    public enum Kind: Sendable, Equatable {
        /// Could not resolve or connect (origin down, no network).
        case unreachable
        /// The connection broke or stalled mid-transfer.
        case interrupted
        /// A redirect loop, a non-http(s) redirect, or a URL or address the
        /// safety rules refuse.
        case refused
        /// The body is larger than the caller's limit; the transfer was
        /// stopped there.
        case tooLarge
        /// The caller aborted the transfer.
        case cancelled
        /// Anything else libcurl reported.
        case other
    }

    public var kind: Kind
    public var message: String
    public var url: String

    public init(kind: Kind, message: String, url: String) {
        self.kind = kind
        self.message = message
        self.url = url
    }

    /// Whether trying the same transfer again may succeed. An HTTP status
    /// is no transfer failure: `OriginAnswer` (PodFS) classifies those.
    public var isTransient: Bool {
        switch kind {
        case .unreachable, .interrupted: return true
        case .refused, .tooLarge, .cancelled, .other: return false
        }
    }

    /// The message and the URL without its secrets (`FeedURL.redacted`):
    /// errors end up in logs and in `podfs status`.
    public var description: String { "\(message) (\(FeedURL.redacted(url, for: .log)))" }
}
