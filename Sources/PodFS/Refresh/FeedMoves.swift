import Foundation
import Locking
import RangeCache

/// Where each SOURCE feed lives now, kept in `<cache-dir>/feed-moves.json`
/// beside the kept copies (docs/DESIGN.md, "Feeds": feeds move).
///
/// A feed is known by the URL it was subscribed with: its folder, its kept
/// copy and its episodes' cache keys stay under that URL, so a move keeps
/// the show's folder and cache. Only the URL fetched changes. The file is
/// replaced atomically (written aside, then renamed).
public final class FeedMoves: Sendable {
    // MARK: - Properties

    /// The file's name inside the cache directory.
    public static let fileName = "feed-moves.json"

    private let path: String
    /// SOURCE URL to the URL it moved to. Guarded by its lock, which also
    /// serialises writing the file.
    private let moves = Locked<[String: String]>([:])

    // MARK: - Init

    /// Starts from what the file says (moves seen by earlier mounts); a
    /// file that does not decode counts as none.
    public init(directory: String) {
        path = directory + "/" + Self.fileName
        let existing = FileManager.default.contents(atPath: path)
            .flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
        moves.withLock { $0 = existing }
    }

    // MARK: - Methods

    /// The URL to fetch for the feed subscribed as `url`.
    public func location(of url: String) -> String {
        moves.withLock { $0[url] } ?? url
    }

    /// Remembers that the feed subscribed as `url` now lives at `newURL`;
    /// returns a problem writing the file, for the caller to log (the move
    /// is used in this mount either way).
    @discardableResult
    public func record(url: String, movedTo newURL: String) -> String? {
        moves.withLock { moves -> String? in
            moves[url] = newURL == url ? nil : newURL
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(moves) else { return "could not encode the feed moves" }
            return CachePrivacy.replaceFile(path, Array(data))
        }
    }
}
