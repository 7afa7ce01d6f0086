import Feeds

/// Which subscription a user means by what they typed: its feed URL (as
/// listed, or as a URL list would read it: `feed://`, spaces) or its
/// folder's name, as `podfs cache clear` takes them.
enum SubscriptionMatch {
    /// The listed URL `text` names; `nil` when none. `names` gives the feed
    /// URL of each folder name (and of each title the list gives a feed);
    /// a name is matched in any case when no name matches as typed and only
    /// one subscription does so.
    static func url(of text: String, among urls: [String], names: [String: String]) -> String? {
        if urls.contains(text) { return text }
        if let normalised = (try? SourceList.parse(Array(text.utf8)))?.first, urls.contains(normalised) {
            return normalised
        }
        if let url = names[text], urls.contains(url) { return url }
        // The feed's URL in another spelling (host in capitals, a default port).
        if let url = SourceList.feedURL(text) {
            let identity = SourceList.feedIdentity(url)
            if let listed = urls.first(where: { SourceList.feedIdentity($0) == identity }) { return listed }
        }
        let folded = text.lowercased()
        let matching = Set(names.filter { $0.key.lowercased() == folded && urls.contains($0.value) }.values)
        return matching.count == 1 ? matching.first : nil
    }

    /// Names to match: each folder's (`shows`, name to URL), and for a feed
    /// with no folder yet, the title its list gives it (`titles`, URL to
    /// title): a show subscribed while no mount ran.
    static func names(shows: [String: String], titles: [String: String]) -> [String: String] {
        var names = shows
        let named = Set(shows.values)
        for (url, title) in titles where !named.contains(url) && names[title] == nil { names[title] = url }
        return names
    }
}
