import Foundation
import Testing

/// A cache made by the podfs of schema 1 (the checked-in fixture
/// `Tests/RangeCacheTests/Fixtures/index-v1.sqlite`) is migrated by a mount
/// and keeps serving what it cached: a full read fetches only the bytes it
/// did not have (docs/DESIGN.md, "The cache index").
@Suite(.serialized, .needsRoot)
struct IndexMigrationMountTests {
    /// The fixture's feed was served on this port (free inside the test's
    /// own network namespace).
    private static let port = 18080
    /// The key of episode 1 (`guid-ep1.mp3`) of that feed, its size and the
    /// one range the fixture lists.
    private static let key = "2b3dbd2e6ecd8e841528cc47f098082d"
    private static let size = 4_194_304
    private static let cached = 3_407_872

    @Test func aSchema1CacheIsMigratedByAMountAndOnlyItsMissingBytesAreFetched() throws {
        let fixture = try Fixture(originPort: Self.port)
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.size, 131_072]))
        // The origin's ETag and Last-Modified come from the files' time:
        // the one they had when the fixture was made.
        try Harness.sh("touch -d '2026-11-01 10:00:00 UTC' '\(fixture.origin.root)'/*.mp3")
        let data = fixture.cacheDirectory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Harness.root + "/Tests/RangeCacheTests/Fixtures/index-v1.sqlite",
            toPath: fixture.cacheDirectory + "/index.sqlite")
        // The scratch file as the old podfs left it: the cached range's
        // bytes, a hole after them.
        let scratch = data + "/" + Self.key
        try fixture.episodes[0].data.prefix(Self.cached).write(to: URL(fileURLWithPath: scratch))
        try Harness.sh("truncate -s \(Self.size) '\(scratch)'")
        #expect(try userVersion(fixture) == 1)

        try fixture.origin.reset()
        try fixture.mount()
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        let sent = try fixture.origin.bytesSent("ep1.mp3")
        let ranges = try fixture.origin.ranges("ep1.mp3")
        print("schema-1 cache, full read after the migration: origin sent \(sent) bytes (the mount's check included) for \(Self.size - Self.cached) missing, ranges \(ranges)")
        #expect(sent >= Int64(Self.size - Self.cached))
        #expect(sent <= Int64(Self.size - Self.cached) + 64 * 1024, "only the missing bytes are fetched")
        #expect(fixture.log().contains("upgraded the cache index"))
        try fixture.unmount()
        #expect(try userVersion(fixture) == 4)
    }

    /// The index's `PRAGMA user_version`, read by Python's sqlite3.
    private func userVersion(_ fixture: Fixture) throws -> Int {
        let script = "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])"
        let text = try Harness.sh("python3 -c \"\(script)\" '\(fixture.cacheDirectory)/index.sqlite'")
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}
