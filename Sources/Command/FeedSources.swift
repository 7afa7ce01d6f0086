import Feeds
import Foundation

/// Turns SOURCE arguments (feed URLs, OPML files, URL lists) into feed
/// URLs, each once, in the order given; `mount` and `prefetch` share it.
enum FeedSources {
    /// The feed URLs; throws a sentence saying which SOURCE is unusable.
    static func urls(_ sources: [String]) throws(FeedSourceError) -> [String] {
        var urls: [String] = []
        for source in sources {
            if isURL(source) {
                guard SourceList.feedURL(source) != nil else {
                    throw FeedSourceError(
                        "SOURCE \(FeedURL.redacted(source, for: .log)) is not a feed URL (it names no host); "
                            + "give one such as https://example.org/feed.xml")
                }
                urls.append(source)
                continue
            }
            if let scheme = scheme(of: source) {
                // The podcast links of web pages (itpc://, feed://) name an
                // http feed; another scheme is not one podfs can read.
                guard ["feed", "itpc", "pcast", "podcast"].contains(scheme), let url = SourceList.feedURL(source) else {
                    throw FeedSourceError(
                        "SOURCE \(FeedURL.redacted(source, for: .log)) uses \(scheme)://; podfs reads feeds over "
                            + "http and https only")
                }
                urls.append(url)
                continue
            }
            guard let data = FileManager.default.contents(atPath: source) else {
                // A mistyped URL may still carry its token.
                let shown = FeedURL.redacted(source, for: .log)
                throw FeedSourceError("SOURCE \(shown) is neither an http(s) URL nor a readable file")
            }
            do {
                urls.append(contentsOf: try SourceList.parse(Array(data)))
            } catch {
                throw FeedSourceError("SOURCE \(source) is not an OPML file or a list of URLs: \(error.message)")
            }
        }
        // One feed in two spellings is one subscription, the first's.
        var seen = Set<String>()
        return urls.filter { seen.insert(SourceList.feedIdentity($0)).inserted }
    }

    /// `sources` with each file (OPML, URL list) as an absolute path, so
    /// they still name the same files after the daemon leaves the
    /// directory it was started from. A URL of any scheme stays as it is.
    static func absolute(_ sources: [String]) -> [String] {
        sources.map { isLink($0) ? $0 : absolutePath($0) }
    }

    /// The scheme of `source` when it is written as a URL (`scheme://`),
    /// lowercased; `nil` for a path.
    static func scheme(of source: String) -> String? {
        // `feed:https://...`, a page's podcast link around an http(s) URL.
        if source.lowercased().hasPrefix("feed:http") { return "feed" }
        guard let end = source.range(of: "://")?.lowerBound, end > source.startIndex else { return nil }
        let scheme = source[..<end]
        guard scheme.first!.isASCII, scheme.first!.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) })
        else { return nil }
        return scheme.lowercased()
    }

    /// Whether `source` is written as a URL of any scheme (a feed URL, a
    /// page's podcast link, or one podfs refuses) rather than a file.
    static func isLink(_ source: String) -> Bool {
        isURL(source) || scheme(of: source) != nil
    }

    /// Whether `source` is a feed URL rather than a file.
    static func isURL(_ source: String) -> Bool {
        let lowered = source.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }
}

/// Why a SOURCE argument could not be used, as a sentence.
struct FeedSourceError: Error {
    let message: String

    init(_ message: String) { self.message = message }
}
