import ArgumentParser
import Foundation
import Testing

@testable import podfs

/// A command takes as its cache only a directory that is new, empty or
/// podfs's own: podfs makes everything in its cache private and `cache
/// clear` deletes its files, so a folder of someone's documents, or the
/// working directory named by `--cache-dir ""`, is refused with a message.
@Suite struct CacheDirectoryChoiceTests {
    // MARK: - Helpers

    /// A new directory holding `files`, removed after `body`.
    private static func withDirectory(files: [String], _ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("podfs-choice-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for file in files {
            let path = directory + "/" + file
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: URL(fileURLWithPath: path))
        }
        try body(directory)
    }

    private static func refusal(_ chosen: String) -> String? {
        do {
            _ = try CacheDirectoryChoice.check(chosen)
            return nil
        } catch let error as ValidationError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    // MARK: - Tests

    @Test func kindsByEntries() {
        #expect(CacheDirectoryChoice.kind(ofEntries: []) == .empty)
        #expect(CacheDirectoryChoice.kind(ofEntries: ["index.sqlite", "notes.txt"]) == .cache)
        #expect(CacheDirectoryChoice.kind(ofEntries: ["subscriptions.txt", "feed-issuers.json"]) == .cache)
        // A mount that stopped before its index was made.
        #expect(CacheDirectoryChoice.kind(ofEntries: ["podfs.log", "lock", "data", "x.json.tmp"]) == .cache)
        #expect(CacheDirectoryChoice.kind(ofEntries: ["data", "notes.txt", "Music"]) == .foreign(["Music", "notes.txt"]))
    }

    @Test func anEmptyOptionIsRefusedRatherThanTheWorkingDirectory() {
        for chosen in ["", "  "] {
            let message = Self.refusal(chosen)
            #expect(message?.contains("the cache directory is empty") == true, "\(chosen.debugDescription)")
        }
    }

    @Test func aFolderOfSomeonesFilesIsRefusedAndLeftAlone() throws {
        try Self.withDirectory(files: ["notes.txt", "data/mine.txt"]) { directory in
            let message = try #require(Self.refusal(directory))
            #expect(message.contains("\(directory) is not a podfs cache"))
            #expect(message.contains("(notes.txt)."), "only the entries that are not podfs's: \(message)")
            #expect(message.contains("--cache-dir DIR"))
            #expect(FileManager.default.fileExists(atPath: directory + "/data/mine.txt"))
        }
    }

    @Test func aFileIsRefused() throws {
        try Self.withDirectory(files: ["afile"]) { directory in
            let message = try #require(Self.refusal(directory + "/afile"))
            #expect(message.contains("is a file, not a directory"))
        }
    }

    @Test func newEmptyAndPodfsDirectoriesAreTaken() throws {
        try Self.withDirectory(files: []) { directory in
            let empty = try CacheDirectoryChoice.check(directory)
            let new = try CacheDirectoryChoice.check(directory + "/new/cache")
            #expect(empty == directory)
            #expect(new == directory + "/new/cache")
        }
        try Self.withDirectory(files: ["index.sqlite", "data/0a1b", "podfs.log"]) { directory in
            let cache = try CacheDirectoryChoice.check(directory)
            #expect(cache == directory)
        }
    }
}
