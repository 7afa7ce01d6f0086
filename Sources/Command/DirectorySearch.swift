import Feeds
import Foundation

/// A search of a podcast directory that speaks the iTunes Search API: the
/// URL to ask, and the matches read from its answer.
///
/// Pure: no I/O. The answer is the only JSON podfs reads from the network,
/// so the reader trusts no type in it: a match without an absolute
/// http(s) feed URL is dropped, any other field that is missing or of an
/// unusable type is `nil`, and only a document with no `results` array is
/// an error.
struct DirectorySearch: Sendable, Equatable {
    // MARK: - Properties

    /// Apple's podcast directory, asked when no `--directory` is given.
    static let appleDirectory = "https://itunes.apple.com"
    /// Matches asked for when no `--limit` is given.
    static let defaultLimit = 20
    /// What the iTunes Search API accepts as `limit`.
    static let limits = 1...200
    /// The largest answer read, in bytes (decoded): 200 rich matches are
    /// well under 1 MiB.
    static let answerLimit = 4 << 20

    /// The search endpoint: the directory URL ending in `/search`, with
    /// any query the user gave and without a fragment.
    let endpoint: String
    /// The words searched for, joined by spaces.
    let term: String
    /// How many matches to ask for.
    let limit: Int

    /// The request URL: the endpoint with `media`, `entity`, `term` and
    /// `limit` added to its query.
    var url: String {
        let separator = endpoint.contains("?") ? "&" : "?"
        return endpoint + separator + "media=podcast&entity=podcast&term=" + Self.encoded(term) + "&limit=\(limit)"
    }

    // MARK: - Init

    /// `nil` when `directory` is not an absolute http(s) URL.
    init?(directory: String, terms: [String], limit: Int) {
        guard let endpoint = Self.endpoint(directory: directory) else { return nil }
        self.endpoint = endpoint
        self.term = terms.joined(separator: " ")
        self.limit = limit
    }

    // MARK: - Methods

    /// The search endpoint of a directory URL: `/search` added to its path
    /// unless the path ends in it already (a trailing slash ignored), the
    /// query kept, the fragment dropped. `nil` when `directory` is not an
    /// absolute http(s) URL.
    static func endpoint(directory: String) -> String? {
        guard var url = FeedURL.resolveHTTP(directory, base: directory) else { return nil }
        if let hash = url.firstIndex(of: "#") { url = String(url[..<hash]) }
        var query = ""
        if let question = url.firstIndex(of: "?") {
            query = String(url[question...])
            url = String(url[..<question])
        }
        // A valid URL has a host, so this never eats into `scheme://`.
        while url.hasSuffix("/") { url.removeLast() }
        if !url.hasSuffix("/search") || url.hasSuffix("://search") { url += "/search" }
        return url + (query == "?" ? "" : query)
    }

    /// `text` as a query value: UTF-8, every byte but RFC 3986's unreserved
    /// characters percent-encoded, a space as `+` (as the Search API's
    /// documentation writes it).
    static func encoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                out += "+"
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    /// The matches in a directory's answer, in its order.
    ///
    /// - Throws: `DirectorySearchError.notJSON` when `bytes` is not JSON,
    ///   `.noResultsList` when it is no object with a `results` array.
    static func results(from bytes: [UInt8]) throws(DirectorySearchError) -> [DirectoryMatch] {
        let document: Any
        do {
            // A lone number or string is JSON too, just no search answer.
            document = try JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed)
        } catch {
            throw .notJSON(bytes.isEmpty ? "the answer was empty" : Self.reason(error))
        }
        guard let object = document as? [String: Any], let results = object["results"] as? [Any] else {
            throw .noResultsList
        }
        return results.compactMap(match)
    }

    // MARK: - Private methods

    /// A match from one entry of `results`; `nil` when it is no object or
    /// has no usable feed URL.
    private static func match(_ entry: Any) -> DirectoryMatch? {
        guard let fields = entry as? [String: Any], let raw = fields["feedUrl"] as? String,
            let feedURL = FeedURL.resolveHTTP(raw, base: raw)
        else { return nil }
        return DirectoryMatch(
            title: text(fields["collectionName"]) ?? text(fields["trackName"]), author: text(fields["artistName"]),
            episodeCount: count(fields["trackCount"]), feedURL: feedURL)
    }

    /// A string field, trimmed; `nil` when absent, not a string or blank.
    private static func text(_ value: Any?) -> String? {
        guard let string = value as? String else { return nil }
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// A count given as a number or a string of one: whole part of a
    /// fraction kept, `nil` for a boolean, a negative, a value beyond any
    /// real count or anything else.
    private static func count(_ value: Any?) -> Int? {
        let number: Double
        if let string = value as? String {
            guard let parsed = Double(string.trimmingCharacters(in: .whitespaces)) else { return nil }
            number = parsed
        } else if let boxed = value as? NSNumber {
            // JSON's true and false arrive as NSNumbers of type `c` (char).
            guard String(cString: boxed.objCType) != "c" else { return nil }
            number = boxed.doubleValue
        } else {
            return nil
        }
        guard number.isFinite, number >= 0, number < 1e12 else { return nil }
        return Int(number)
    }

    /// What JSONSerialization said, without Foundation's error wrapping.
    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
    }
}
