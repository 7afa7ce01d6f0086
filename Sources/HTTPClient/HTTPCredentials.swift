/// Who a request logs in as, with HTTP Basic authentication.
///
/// The password is never part of any text this type gives: `description`
/// names the user only, so a credential that reaches a log line or an
/// error message gives nothing away.
public enum HTTPCredentials: Sendable, Equatable, CustomStringConvertible {
    /// A user name and the password read from a file.
    case basic(user: String, password: String)
    /// A user name whose password libcurl finds in `~/.netrc` (the entry
    /// for the URL's host and this login); none there: no password is sent.
    case netrc(user: String)

    /// The user name, and where the password comes from.
    public var description: String {
        switch self {
        case .basic(let user, _): return "user \(user) (password from a file)"
        case .netrc(let user): return "user \(user) (password from ~/.netrc)"
        }
    }

    /// The user name sent.
    public var user: String {
        switch self {
        case .basic(let user, _), .netrc(let user): return user
        }
    }
}
