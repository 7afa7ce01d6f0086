import Foundation
import Logging
import RangeCache
import Testing

/// An index made by an older podfs is migrated in place and keeps what it
/// cached; one made by a newer podfs is refused with a clear error and left
/// alone (docs/DESIGN.md, "The cache index").
@Suite struct IndexMigrationTests {
    // MARK: - Private properties

    private let logger = Logger(label: "test")
    /// What `Fixtures/make-index-v1.sh` mounted and read.
    private let fixtureFeed = "http://127.0.0.1:18080/feed.xml"
    private let fixtureRange: Range<Int64> = 0..<3_407_872
    private let fixtureETag = "\"4194304-18e3e37c63004000\""

    // MARK: - Helpers

    /// Runs `body` with a cache directory holding a copy of the schema-1
    /// fixture, removed afterwards even when `body` throws.
    private func withFixtureCache(_ body: (String) throws -> Void) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/index-v1.sqlite")
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("IndexMigrationTests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: fixture, to: cache.appendingPathComponent("index.sqlite"))
        try body(cache.path)
    }

    private func fixtureKey(_ n: Int) -> String {
        CacheIndex.episodeKey(feedURL: fixtureFeed, identity: "guid-ep\(n).mp3")
    }

    /// Writes `version` into the SQLite header's user_version (offset 60,
    /// big-endian) of a database with nothing left in its WAL.
    private func setUserVersion(_ version: UInt32, path: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: 60)
        try handle.write(contentsOf: withUnsafeBytes(of: version.bigEndian) { Data($0) })
    }

    // MARK: - Older versions

    @Test func schema1FixtureIsMigratedKeepingItsRanges() throws {
        try withFixtureCache { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            #expect(index.schemaVersion == 4)
            #expect(index.damagedIndexMovedTo == nil)
            let one = try #require(try index.episode(key: fixtureKey(1)))
            #expect(one.url == "http://127.0.0.1:18080/ep1.mp3")
            #expect(one.ranges == [fixtureRange])
            #expect(one.length == 4_194_304)
            #expect(one.etag == fixtureETag)
            #expect(one.lastModified == "Sun, 01 Nov 2026 10:00:00 GMT")
            #expect(one.variant == EpisodeVariant())
            let two = try #require(try index.episode(key: fixtureKey(2)))
            #expect(two.ranges.isEmpty && two.length == nil)
            // Registering the feed again, as a mount does, keeps rows and ranges.
            let again = try index.register(
                feedURL: fixtureFeed,
                episodes: [(key: fixtureKey(1), url: one.url), (key: fixtureKey(2), url: two.url)])
            #expect(again.records.map(\.id) == [one.id, two.id])
            #expect(again.records[0].ranges == [fixtureRange])
            #expect(try index.usage().first { $0.key == fixtureKey(1) }?.bytes == Int64(fixtureRange.count))
        }
    }

    @Test func migratedIndexKeepsTheNewFieldsAcrossReopen() throws {
        try withFixtureCache { directory in
            let key = fixtureKey(1)
            do {
                let index = try CacheIndex(directory: directory, logger: logger)
                try index.setValidator(EpisodeValidator(
                    key: key, length: 4_194_304, etag: fixtureETag, lastModified: nil,
                    pinnedURL: "http://127.0.0.1:18080/v/1/ep1.mp3?sig=a", pinnedIssuer: "loopback"))
                try index.markUnstable(key: key, reason: "overlap-mismatch")
                try index.markFinal(key: key, true)
            }
            let index = try CacheIndex(directory: directory, logger: logger)
            let record = try #require(try index.episode(key: key))
            #expect(record.ranges == [fixtureRange])
            #expect(
                record.variant
                    == EpisodeVariant(
                        pinnedURL: "http://127.0.0.1:18080/v/1/ep1.mp3?sig=a", pinnedIssuer: "loopback",
                        unstable: "overlap-mismatch", isFinal: true))
            try index.markUnstable(key: key, reason: nil)
            try index.markFinal(key: key, false)
            #expect(try index.episode(key: key)?.variant.unstable == nil)
            #expect(try index.episode(key: key)?.variant.isFinal == false)
        }
    }

    /// Schema 4: the marks earlier versions wrote as sentences move to
    /// their stable codes.
    @Test func schema3SentencesMoveToTheirCodes() throws {
        try withFixtureCache { directory in
            let path = directory + "/index.sqlite"
            let sentences = [
                "the length changed between requests (5242880 then 5243904 bytes)": "length-changed",
                "the validator changed between requests": "validator-changed",
                "the ETag vanished between requests": "etag-vanished",
                "a range was asked and the whole body came (HTTP 200)": "whole-body-for-range",
                "bytes fetched again did not match the cached ones": "overlap-mismatch",
                "the origin sends no validator (no ETag, no Last-Modified)": "no-validator",
                "as another episode of its show": "show-stitches",
                "the overlap did not match": "overlap-mismatch",
            ]
            for (sentence, code) in sentences {
                // An index as schema 3 left it, with the sentence (closed:
                // nothing left in its WAL).
                do {
                    let index = try CacheIndex(directory: directory, logger: logger)
                    try index.markUnstable(key: fixtureKey(1), reason: sentence)
                }
                try setUserVersion(3, path: path)
                let index = try CacheIndex(directory: directory, logger: logger)
                #expect(index.schemaVersion == 4)
                #expect(try index.episode(key: fixtureKey(1))?.variant.unstable == code, "\(sentence)")
                #expect(try index.episode(key: fixtureKey(2))?.variant.unstable == nil)
            }
        }
    }

    @Test func readOnlyOpenReadsSchema1AsItIs() throws {
        try withFixtureCache { directory in
            do {
                let reader = try CacheIndex(readingDirectory: directory, logger: logger)
                #expect(reader.schemaVersion == 1)
                let feeds = try reader.snapshot()
                let episodes = try #require(feeds.first { $0.url == fixtureFeed }).episodes
                #expect(episodes.map(\.ranges) == [[fixtureRange], []])
                #expect(episodes.allSatisfy { $0.variant == EpisodeVariant() })
            }
            // Reading did not migrate: the next writer does.
            #expect(try CacheIndex(readingDirectory: directory, logger: logger).schemaVersion == 1)
            #expect(try CacheIndex(directory: directory, logger: logger).schemaVersion == 4)
            #expect(try CacheIndex(readingDirectory: directory, logger: logger).schemaVersion == 4)
        }
    }

    // MARK: - The feed changing an episode

    @Test func anEnclosureAtANewPathForgetsTheEpisodeButANewQueryDoesNot() throws {
        try withFixtureCache { directory in
            let index = try CacheIndex(directory: directory, logger: logger)
            let key = fixtureKey(1)
            try index.setValidator(EpisodeValidator(
                key: key, length: 4_194_304, etag: fixtureETag, lastModified: nil, pinnedURL: "http://cdn/v1",
                pinnedIssuer: "loopback", isFinal: true))
            _ = try index.register(
                feedURL: fixtureFeed, episodes: [(key: key, url: "http://127.0.0.1:18080/ep1.mp3?updated=2")])
            let same = try #require(try index.episode(key: key))
            #expect(same.ranges == [fixtureRange] && same.variant.isFinal && same.variant.pinnedURL == "http://cdn/v1")
            _ = try index.register(
                feedURL: fixtureFeed, episodes: [(key: key, url: "http://127.0.0.1:18080/new/ep1.mp3?updated=3")])
            let moved = try #require(try index.episode(key: key))
            #expect(moved.ranges.isEmpty && moved.length == nil && moved.etag == nil)
            #expect(moved.variant == EpisodeVariant())
        }
    }

    // MARK: - Newer versions

    @Test func newerSchemaIsRefusedAndLeftAlone() throws {
        try withFixtureCache { directory in
            let path = directory + "/index.sqlite"
            try setUserVersion(5, path: path)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            for open in [
                { () throws -> CacheIndex in try CacheIndex(directory: directory, logger: logger) },
                { () throws -> CacheIndex in try CacheIndex(readingDirectory: directory, logger: logger) },
            ] {
                do {
                    _ = try open()
                    Issue.record("an index of schema 5 was opened")
                } catch let error as IndexError {
                    #expect(error.description.contains("schema version 5, made by a newer podfs"))
                    #expect(error.description.contains("--cache-dir"))
                    #expect(!error.description.contains("cache clear"))
                }
            }
            // Not moved aside as damaged, not changed.
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(!names.contains { $0.contains("corrupt") })
        }
    }
}
