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
                urls.append(source)
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
        var seen = Set<String>()
        return urls.filter { seen.insert($0).inserted }
    }

    /// `sources` with each file (OPML, URL list) as an absolute path, so
    /// they still name the same files after the daemon leaves the
    /// directory it was started from.
    static func absolute(_ sources: [String]) -> [String] {
        sources.map { isURL($0) ? $0 : absolutePath($0) }
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
