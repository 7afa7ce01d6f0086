// libFuzzer target for the feed parser (scripts/fuzz feed). Compiled together
// with Sources/Feeds/*.swift into one module: every input is parsed as a feed
// and as a source list; neither may crash, hang or leak, and parsing is a pure
// function of the bytes (the same input parses to the same result twice).

#if canImport(Feeds)
import Feeds
#endif

/// What is wrong with one input, or `nil`. The target's entry file crashes
/// on a finding (for libFuzzer); the unit tests that replay the corpus fail
/// the test that names the input instead.
func feedFuzzFinding(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String? {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    let first = try? FeedParser.parse(bytes, baseURL: "https://feeds.example.org/show/feed.xml")
    let second = try? FeedParser.parse(bytes, baseURL: "https://feeds.example.org/show/feed.xml")
    if first != second {
        return "FeedParser.parse gave two different results for the same \(size) bytes"
    }
    if let feed = first {
        // Touch every string (a bad decode would trap here under ASan).
        var total = feed.title?.utf8.count ?? 0
        for episode in feed.episodes {
            total &+= (episode.title?.utf8.count ?? 0) &+ episode.enclosureURL.utf8.count &+ episode.identity.utf8.count
        }
        _ = total
    }
    _ = try? SourceList.parse(bytes)
    return nil
}
