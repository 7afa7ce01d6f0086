public import Foundation
public import Testing

/// The feed corpus and its TSV tables of upstream expectations:
/// `$PODFS_FEED_CORPUS`, else the repository's copy (`Tests/Corpus/feeds`).
/// Suites that read it skip, saying so, when neither holds it (and fail
/// when `PODFS_CI=1`, `Requirement`).
public enum Corpus {
    // MARK: - Properties

    /// Where the corpus is looked for, in order: `$PODFS_FEED_CORPUS`, then
    /// the repository's copy, `Tests/Corpus/feeds` (found from this file's
    /// path), so a clone alone runs every corpus suite.
    public static let candidates: [URL] = {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["PODFS_FEED_CORPUS"], !path.isEmpty {
            candidates.append(URL(fileURLWithPath: path))
        }
        candidates.append(
            URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent()  // TestSupport
                .deletingLastPathComponent()  // Tests
                .appendingPathComponent("Corpus/feeds")
                .standardizedFileURL)
        return candidates
    }()

    /// The first candidate that holds the corpus (its `expected-feeds.tsv`).
    public static let found: URL? = candidates.first {
        FileManager.default.fileExists(atPath: $0.appendingPathComponent("expected-feeds.tsv").path)
    }

    /// The corpus (the last place looked when there is none: reads fail
    /// naming it).
    public static var directory: URL { found ?? candidates[candidates.count - 1] }

    // MARK: - Methods

    /// The bytes of a corpus file, by its path relative to the corpus root.
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(relativePath)))
    }

    /// The rows of a TSV table as dictionaries keyed by the header, fields
    /// unescaped (`\\`, `\t`, `\n`, `\r`).
    public static func table(_ name: String) throws -> [[String: String]] {
        let text = String(decoding: try bytes(name), as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard !lines.isEmpty else { return [] }
        let header = lines.removeFirst().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        return lines.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map { unescape(String($0)) }
            var row: [String: String] = [:]
            for (index, key) in header.enumerated() {
                row[key] = index < fields.count ? fields[index] : ""
            }
            return row
        }
    }

    /// The URL a test pretends a corpus feed was fetched from. podcastparser's
    /// expectations use `file://tests/data/<name>`; podfs only accepts http(s),
    /// so the same path is used with http.
    public static func baseURL(for relativePath: String) -> String {
        "http://tests/data/" + (relativePath.split(separator: "/").last.map(String.init) ?? relativePath)
    }

    // MARK: - Private methods

    private static func unescape(_ field: String) -> String {
        guard field.contains("\\") else { return field }
        var result = ""
        var escaping = false
        for character in field {
            if escaping {
                switch character {
                case "t": result.append("\t")
                case "n": result.append("\n")
                case "r": result.append("\r")
                default: result.append(character)
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}

extension Trait where Self == ConditionTrait {
    /// For suites that read the shared feed corpus: skipped, saying where
    /// it was looked for, when it is not there.
    public static var needsCorpus: Self {
        .needs(
            Corpus.found != nil
                ? nil
                : "the shared feed corpus is missing: looked in "
                    + Corpus.candidates.map(\.path).joined(separator: " and ")
                    + "; set PODFS_FEED_CORPUS to a folder holding expected-feeds.tsv")
    }
}
