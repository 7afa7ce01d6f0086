/// Who wrote a URL podfs is about to fetch: the user (a SOURCE on the
/// command line, an OPML file), or a server in some zone (a feed's
/// enclosure, or a redirect's `Location`).
public enum URLIssuer: Sendable, Hashable, CustomStringConvertible {
    case user
    case server(AddressZone)

    public var description: String {
        switch self {
        case .user: return "you"
        case .server(let zone): return "a server at \(zone.phrase)"
        }
    }
}
