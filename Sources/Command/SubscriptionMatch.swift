import Feeds

/// Which subscription a user means by what they typed: its feed URL (as
/// listed, or as a URL list would read it: `feed://`, spaces) or its
/// folder's name, as `podfs cache clear` takes them.
enum SubscriptionMatch {
    /// The listed URL `text` names; `nil` when none. `showNamed` gives the
    /// feed URL of a folder name.
    static func url(of text: String, among urls: [String], showNamed: (String) -> String?) -> String? {
        if urls.contains(text) { return text }
        if let normalised = (try? SourceList.parse(Array(text.utf8)))?.first, urls.contains(normalised) {
            return normalised
        }
        if let url = showNamed(text), urls.contains(url) { return url }
        return nil
    }
}
