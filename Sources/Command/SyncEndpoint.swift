import Feeds
import Foundation
import PodFS

/// Where a mount's subscriptions sync: the server, its layout, the user and
/// the device, read from `-o sync=URL` (`https://alice@gpodder.net`).
///
/// The layout comes from the URL, never from a flag (docs/DESIGN.md,
/// "Subscriptions"):
/// 1. a path with `/index.php` or `/apps/gpoddersync` in it is Nextcloud
///    GPodderSync, whose root is what comes before;
/// 2. a path ending in `/api/2` is the gpodder.net API, its root before
///    `/api/2`;
/// 3. `gpodder.net` and its subdomains are the gpodder.net API;
/// 4. anything else is asked once: a Nextcloud answers `ROOT/status.php`
///    with a JSON object naming its product (`isNextcloudStatus`);
///    every other answer means the gpodder.net API at ROOT.
///
/// The user name is the URL's; a password in the URL is refused, since mount
/// options are seen by every local user (`/proc/mounts`, `ps`). Requests go
/// to URLs without userinfo, and the credentials go to libcurl apart.
struct SyncEndpoint: Sendable, Equatable {
    // MARK: - Nested types

    /// The two server layouts podfs speaks.
    enum Layout: String, Sendable {
        case gpodder
        case nextcloud
    }

    /// What the URL alone says.
    enum Reading: Sendable, Equatable {
        case known(SyncEndpoint)
        /// Ambiguous: GET `statusURL` and pass the answer to `settled`.
        case probe(statusURL: String, gpodder: SyncEndpoint, nextcloud: SyncEndpoint)
    }

    // MARK: - Properties

    let layout: Layout
    /// `scheme://host[:port][/path]`: no userinfo, no trailing `/`.
    let root: String
    /// The user name, decoded.
    let user: String
    /// The gpodder device ID (Nextcloud keeps one list per user and
    /// ignores it).
    let device: String

    // MARK: - Methods

    /// The server as shown in messages: the URL without secrets.
    var shown: String { FeedURL.redacted(root, for: .log) }

    /// Where a pull goes.
    func pullURL(since: Int64) -> String {
        switch layout {
        case .gpodder: return "\(root)/api/2/subscriptions/\(Self.segment(user))/\(device).json?since=\(since)"
        // Nextcloud answers only the last week's changes when `since` is
        // left out, so it is always sent.
        case .nextcloud: return "\(root)/index.php/apps/gpoddersync/subscriptions?since=\(since)"
        }
    }

    /// Where a gpodder.net device is made or named (its caption and
    /// type); `nil` for Nextcloud, which has no devices.
    var deviceURL: String? {
        switch layout {
        case .gpodder: return "\(root)/api/2/devices/\(Self.segment(user))/\(device).json"
        case .nextcloud: return nil
        }
    }

    /// The account's devices, and its sync groups (gpodder.net only).
    var deviceListURLs: (devices: String, groups: String)? {
        switch layout {
        case .gpodder:
            return ("\(root)/api/2/devices/\(Self.segment(user)).json", "\(root)/api/2/sync-devices/\(Self.segment(user)).json")
        case .nextcloud: return nil
        }
    }

    /// Where a push goes.
    var pushURL: String {
        switch layout {
        case .gpodder: return "\(root)/api/2/subscriptions/\(Self.segment(user))/\(device).json"
        case .nextcloud: return "\(root)/index.php/apps/gpoddersync/subscription_change/create"
        }
    }

    /// Who syncs, whatever the layout: the account a sync state belongs
    /// to (`key`: the server without userinfo, the user and the device;
    /// kept in the cache's private sync-state.json) and the same for
    /// messages (`shown`: "alice at https://gpodder.net"). A URL's user
    /// without a password is redacted as a token elsewhere; here it is the
    /// account's name, and two accounts on one server must differ.
    static func account(of reading: Reading) -> (key: String, shown: String) {
        let endpoint: SyncEndpoint
        switch reading {
        case .known(let known): endpoint = known
        case .probe(_, let gpodder, _): endpoint = gpodder
        }
        let server = FeedURL.redacted(endpoint.root, for: .display)
        return ("\(endpoint.root) user=\(endpoint.user) device=\(endpoint.device)", "\(endpoint.user) at \(server)")
    }

    /// Reads `-o sync=URL` with the device ID (`sync_device`, or the host
    /// name through `deviceID(hostName:)`).
    static func read(_ url: String, device: String) throws(SyncError) -> Reading {
        let shown = FeedURL.redacted(url, for: .log)
        let lower = url.lowercased()
        guard let scheme = ["https://", "http://"].first(where: { lower.hasPrefix($0) }) else {
            throw SyncError(.setup, "the sync URL \(shown) is not an http or https URL (e.g. sync=https://alice@gpodder.net)")
        }
        var rest = Substring(url.dropFirst(scheme.count))
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        guard !rest.contains("?") else {
            throw SyncError(.setup, "the sync URL \(shown) has a query (?...); give the server's address only")
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        // The userinfo runs to the last `@`, as libcurl reads it.
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else {
            throw SyncError(.setup, "the sync URL \(shown) names no user: write it as \(scheme)NAME@\(rest)")
        }
        let userinfo = rest[..<at]
        guard !userinfo.contains(":") else {
            throw SyncError(
                .setup,
                "the sync URL \(shown) holds a password, which every local user can read in the mount options: "
                    + "remove it and put it in a file given as sync_password_file=FILE (chmod 600), or in ~/.netrc")
        }
        guard let user = String(userinfo).removingPercentEncoding, !user.isEmpty,
            !user.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw SyncError(.setup, "the sync URL \(shown) names no usable user before the @")
        }
        let hostPart = rest[rest.index(after: at)..<authorityEnd]
        var path = String(rest[authorityEnd...])
        while path.hasSuffix("/") { path.removeLast() }
        guard let checked = FeedURL.resolveHTTP(scheme + hostPart + path, base: ""), !hostPart.isEmpty else {
            throw SyncError(.setup, "the sync URL \(shown) has no usable host and path")
        }
        let root = checked
        try checkDevice(device)
        func endpoint(_ layout: Layout, _ root: String) -> SyncEndpoint {
            SyncEndpoint(layout: layout, root: root, user: user, device: device)
        }
        let rootPath = String(checked.dropFirst(scheme.count + hostPart.count))
        for marker in ["/index.php", "/apps/gpoddersync"] {
            if let range = rootPath.range(of: marker) {
                return .known(endpoint(.nextcloud, scheme + hostPart + rootPath[..<range.lowerBound]))
            }
        }
        if rootPath.hasSuffix("/api/2") {
            return .known(endpoint(.gpodder, String(root.dropLast("/api/2".count))))
        }
        let host = hostPart.lowercased()
        if host == "gpodder.net" || host.hasSuffix(".gpodder.net") {
            return .known(endpoint(.gpodder, root))
        }
        return .probe(
            statusURL: root + "/status.php", gpodder: endpoint(.gpodder, root), nextcloud: endpoint(.nextcloud, root))
    }

    /// Whether `body`, answered with `status` to `ROOT/status.php`, comes
    /// from a Nextcloud (or its ancestor ownCloud): a JSON object with
    /// `installed` and a product name or version string.
    static func isNextcloudStatus(status: Int, body: [UInt8]) -> Bool {
        guard status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            object["installed"] != nil
        else { return false }
        return object["productname"] is String || object["versionstring"] is String
    }

    /// A gpodder device ID made from the host name: letters, digits, `.`,
    /// `-` and `_` kept, anything else a `-`; "podfs" when nothing is left.
    static func deviceID(hostName: String) -> String {
        let kept = String(hostName.unicodeScalars.map { isDeviceCharacter($0) ? Character($0) : "-" })
        let trimmed = kept.trimmingCharacters(in: CharacterSet(charactersIn: "-."))
        return trimmed.isEmpty ? "podfs" : String(trimmed.prefix(64))
    }

    // MARK: - Private methods

    /// gpodder.net takes device IDs of letters, digits, `.`, `-` and `_`.
    private static func checkDevice(_ device: String) throws(SyncError) {
        guard !device.isEmpty, device.count <= 64, device.unicodeScalars.allSatisfy(isDeviceCharacter),
            device.first != "."
        else {
            throw SyncError(
                .setup,
                "sync_device=\(device.debugDescription) is not a device name the gpodder API takes: use letters, "
                    + "digits, '.', '-' and '_' (at most 64), e.g. sync_device=podfs-laptop")
        }
    }

    private static func isDeviceCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
    }

    /// `text` percent-encoded as one path segment.
    private static func segment(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
