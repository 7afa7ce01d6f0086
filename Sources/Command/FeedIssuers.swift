import Foundation
import HTTPClient
import RangeCache

/// Feeds that a server, not the user, named: a show's web page linked it,
/// or a sync server listed it. Each is fetched under the zone of the
/// server that named it on every mount (docs/DESIGN.md, guarantee 6), as an
/// enclosure is under its feed's, so a public page or sync server cannot
/// send podfs to the LAN by way of a subscription.
///
/// Kept in `<cache-dir>/feed-issuers.json` (feed URL to `AddressZone`'s raw
/// value), replaced atomically.
enum FeedIssuers {
    static let fileName = "feed-issuers.json"

    /// The feeds a server named, and its zone.
    static func read(directory: String) -> [String: AddressZone] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName),
            let raw = try? JSONDecoder().decode([String: String].self, from: data)
        else { return [:] }
        return raw.compactMapValues { AddressZone(rawValue: $0) }
    }

    /// Records that servers in these zones named these feeds; `nil`
    /// forgets a feed (the user named it after all). Returns why the file
    /// could not be written, for the caller to say.
    @discardableResult
    static func record(_ feeds: [String: AddressZone?], directory: String) -> String? {
        guard !feeds.isEmpty else { return nil }
        var all = read(directory: directory)
        for (url, zone) in feeds { all[url] = zone }
        guard let data = try? JSONEncoder().encode(all.mapValues(\.rawValue)) else { return nil }
        return CachePrivacy.replaceFile(directory + "/" + fileName, Array(data))
    }
}
