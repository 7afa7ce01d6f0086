import HTTPClient

/// Why `podfs search` has no list to show: the directory could not be
/// asked, or its answer was not a search result.
///
/// `message(directory:)` says what happened and what to do, in one line.
enum DirectorySearchError: Error, Equatable {
    /// The directory answered with an HTTP status other than 200.
    case status(Int)
    /// The request failed before a whole answer came: no connection, a
    /// refused redirect, a timeout (`HTTPError.Kind` says which).
    case transfer(HTTPError.Kind, String)
    /// The answer was larger than the limit (bytes); the download stopped.
    case tooLarge(Int)
    /// The answer is not JSON (the parser's reason).
    case notJSON(String)
    /// The answer is JSON but no object with a `results` array.
    case noResultsList

    /// The line to print after `podfs search: `, naming the directory as
    /// `directory` (already stripped of secrets).
    func message(directory: String) -> String {
        let check = "check that --directory points at a server speaking the iTunes Search API"
        switch self {
        case .status(let code) where code == 429 || code >= 500:
            return "the directory at \(directory) answered \(code) (\(Self.phrase(code))); try again later"
        case .status(let code):
            return "the directory at \(directory) answered \(code) (\(Self.phrase(code))) instead of search results; \(check)"
        case .transfer(.unreachable, let detail):
            return "could not reach the directory at \(directory) (\(detail)); check the network connection, "
                + "or the address given with --directory"
        case .transfer(.interrupted, let detail):
            return "the directory at \(directory) did not answer in time or broke off (\(detail)); try again later"
        case .transfer(_, let detail):
            return "could not ask the directory at \(directory): \(detail)"
        case .tooLarge(let limit):
            return "the answer from the directory at \(directory) is larger than \(limit >> 20) MiB and was not read "
                + "further; ask for fewer matches with --limit, or \(check)"
        case .notJSON(let reason):
            return "the directory at \(directory) did not answer with JSON (\(reason)); \(check)"
        case .noResultsList:
            return "the directory at \(directory) answered JSON with no \"results\" list; \(check)"
        }
    }

    // MARK: - Private methods

    /// The reason phrase of the common statuses, else a general word.
    private static func phrase(_ code: Int) -> String {
        switch code {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 300..<400: return "a redirect podfs could not follow"
        case 400..<500: return "the request was refused"
        case 500..<600: return "a server error"
        default: return "an unexpected status"
        }
    }
}
