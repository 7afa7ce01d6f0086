import Feeds
import Foundation

/// Turns SOURCE arguments (feed URLs, OPML files, URL lists) into feed
/// URLs, each once, in the order given; `mount` and `prefetch` share it.
enum FeedSources {
    /// The feed URLs; throws a sentence saying which SOURCE is unusable.
    static func urls(_ sources: [String]) throws(FeedSourceError) -> [String] {
        var urls: [String] = []
        for source in sources {
            let lowered = source.lowercased()
            if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
                urls.append(source)
                continue
            }
            guard let data = FileManager.default.contents(atPath: source) else {
                throw FeedSourceError("SOURCE \(source) is neither an http(s) URL nor a readable file")
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
}

/// Why a SOURCE argument could not be used, as a sentence.
struct FeedSourceError: Error {
    let message: String

    init(_ message: String) { self.message = message }
}
