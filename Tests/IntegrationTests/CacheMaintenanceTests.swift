import Foundation
import Testing

/// `podfs cache verify` and `podfs cache clear` on real caches left by real
/// mounts: what they find, what they repair, that the index then lists only
/// bytes that are on disk, that a remount reads every byte right, and that
/// both refuse (changing nothing) while a mount uses the cache.
@Suite(.serialized, .needsRoot)
struct CacheMaintenanceTests {
    private static let mib = 1024 * 1024

    private func podfs(_ arguments: [String]) throws -> Harness.Output {
        try Harness.run(Harness.podfs, arguments, timeout: 60)
    }

    private func sha(_ data: Data, _ fixture: Fixture) throws -> String {
        let file = fixture.directory + "/expected-\(UUID().uuidString.prefix(6))"
        try data.write(to: URL(fileURLWithPath: file))
        return try Harness.sha256(file)
    }

    @Test func verifyFindsAndRepairsEveryKindOfDamage() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [2 * Self.mib, 2 * Self.mib + 1, 3 * Self.mib, Self.mib + 5]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        try fixture.mount()
        for index in sizes.indices { try Harness.sh("cat '\(fixture.path(index))' > /dev/null") }
        // While mounted, verify refuses, names the mount and changes nothing.
        let busy = try podfs(["cache", "verify", "--cache-dir", fixture.cacheDirectory])
        #expect(busy.status == 2, "\(busy.text) \(busy.stderr)")
        #expect(busy.stderr.contains("the podfs mount on \(fixture.mountpoint)"), "\(busy.stderr)")
        #expect(busy.stderr.contains("podfs unmount"), "\(busy.stderr)")
        try fixture.unmount()

        let clean = try podfs(["cache", "verify", "--cache-dir", fixture.cacheDirectory])
        #expect(clean.status == 0, "\(clean.text) \(clean.stderr)")
        #expect(clean.text.contains("No problems"), "\(clean.text)")

        // Damage the cache in every way verify knows (all of it is cached).
        let status = try CacheStatus(fixture.cacheDirectory)
        try #require(
            sizes.indices.allSatisfy { status[fixture.name($0)]?.cachedBytes == sizes[$0] },
            "the unmount committed every episode: \(status.cached)")
        let keys = try sizes.indices.map { try #require(status[fixture.name($0)]?.key) }
        let data = fixture.cacheDirectory + "/data/"
        try FileManager.default.removeItem(atPath: data + keys[0])
        try Harness.sh("truncate -s 1000 '\(data + keys[1])'")
        try Harness.sh("fallocate -p -o \(Self.mib) -l 65536 '\(data + keys[2])'")
        try Harness.sh(
            "python3 -c \"import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); "
                + "db.execute('UPDATE ranges SET upper = upper + 4096 WHERE episode_id = (SELECT id FROM episodes WHERE key = ?) "
                + "AND upper = (SELECT MAX(upper) FROM ranges r JOIN episodes e ON e.id = r.episode_id WHERE e.key = ?)', "
                + "(sys.argv[2], sys.argv[2])); db.commit()\" '\(fixture.cacheDirectory)/index.sqlite' \(keys[3])")
        let orphan = data + "0123456789abcdef0123456789abcdef"
        try Harness.sh("head -c 100000 /dev/urandom > '\(orphan)'")

        let repaired = try podfs(["cache", "verify", "--cache-dir", fixture.cacheDirectory])
        #expect(repaired.status == 1, "problems found: exit 1. \(repaired.text) \(repaired.stderr)")
        let lines = repaired.text.split(separator: "\n").filter { $0.hasPrefix("problem: ") }
        #expect(lines.count == 5, "\(repaired.text)")
        #expect(lines.contains { $0.contains(fixture.name(0)) && $0.contains("the cache file is missing") }, "\(repaired.text)")
        #expect(lines.contains { $0.contains(fixture.name(1)) && $0.contains("has 1000 bytes") }, "\(repaired.text)")
        #expect(lines.contains { $0.contains(fixture.name(2)) && $0.contains("holes in the cache file") }, "\(repaired.text)")
        #expect(lines.contains { $0.contains(fixture.name(3)) && $0.contains("of an episode of") }, "\(repaired.text)")
        #expect(lines.contains { $0.contains("no episode in the index owns") && $0.contains("deleted it") }, "\(repaired.text)")
        #expect(!FileManager.default.fileExists(atPath: orphan), "the orphan is deleted")
        #expect(!FileManager.default.fileExists(atPath: data + keys[1]), "a file of the wrong length is deleted")
        let after = try CacheStatus(fixture.cacheDirectory)
        #expect(after[fixture.name(0)]?.cachedBytes == 0)
        #expect(after[fixture.name(1)]?.cachedBytes == 0)
        #expect(after[fixture.name(2)]?.cachedBytes == sizes[2] - 65536, "only the hole is forgotten")
        #expect(after[fixture.name(3)]?.cachedBytes == 0)
        for index in sizes.indices { try fixture.checkIndex(index) }
        let again = try podfs(["cache", "verify", "--cache-dir", fixture.cacheDirectory])
        #expect(again.status == 0, "a repaired cache verifies clean: \(again.text)")

        // A remount reads every byte right, fetching only what was forgotten.
        try fixture.origin.reset()
        try fixture.mount()
        for index in sizes.indices {
            let copy = fixture.directory + "/copy\(index)"
            try Harness.sh("cat '\(fixture.path(index))' > '\(copy)'")
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)), "episode \(index + 1)")
        }
        #expect(try fixture.origin.bytesSent("ep3.mp3") <= 256 * 1024, "the kept part of episode 3 is not fetched again")
        #expect(try fixture.origin.bytesSent("ep1.mp3") >= Int64(sizes[0]), "a forgotten episode is fetched again")
        try fixture.unmount()
    }

    @Test func clearEmptiesOneFeedOrAllAndRefusesWhileMounted() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [2 * Self.mib, 3 * Self.mib + 7]
        try fixture.publish(Fixture.episodes(sizes: sizes))
        let otherSize = 2 * Self.mib + 3
        try fixture.origin.put("other1.mp3", Harness.bytes(count: otherSize, seed: 77))
        try fixture.origin.put(
            "feed2.xml",
            Data("""
                <?xml version="1.0" encoding="UTF-8"?>
                <rss version="2.0"><channel><title>Other Show</title>
                <item><title>Other 1</title><guid>other-1</guid><pubDate>Thu, 05 Nov 2026 10:00:00 GMT</pubDate>
                <enclosure url="{{BASE}}/other1.mp3" length="\(otherSize)" type="audio/mpeg"/></item>
                </channel></rss>
                """.utf8))
        let otherPath = fixture.mountpoint + "/Other Show/2026-11-05 Other 1.mp3"
        let (otherName, otherShow) = ("2026-11-05 Other 1.mp3", "Other Show/2026-11-05 Other 1.mp3")
        let feedURL = "\(fixture.origin.base)/feed.xml"
        try fixture.mount(extra: ["\(fixture.origin.base)/feed2.xml"], waitFor: .paths(fixture.publishedPaths + [otherShow]))
        func readAll() throws {
            for index in sizes.indices {
                let copy = fixture.directory + "/copy\(index)"
                try Harness.sh("cat '\(fixture.path(index))' > '\(copy)'")
                #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(index)), "episode \(index + 1)")
            }
            let copy = fixture.directory + "/copy-other"
            try Harness.sh("cat '\(otherPath)' > '\(copy)'")
            #expect(try Harness.sha256(copy) == Harness.sha256(fixture.origin.root + "/other1.mp3"))
        }
        try readAll()
        // Until everything read is committed.
        let allCommitted = Harness.eventually(60) {
            let cached = (try? CacheStatus(fixture.cacheDirectory).cached) ?? [:]
            return cached[otherName] == otherSize
                && sizes.indices.allSatisfy { cached[fixture.name($0)] == sizes[$0] }
        }
        #expect(allCommitted, "what was read is committed")
        let before = try CacheStatus(fixture.cacheDirectory).cached

        // While mounted: refused, nothing changed.
        let busy = try podfs(["cache", "clear", "--cache-dir", fixture.cacheDirectory])
        #expect(busy.status == 2, "\(busy.text) \(busy.stderr)")
        #expect(busy.stderr.contains("the podfs mount on \(fixture.mountpoint)"), "\(busy.stderr)")
        #expect(busy.stderr.contains("Nothing was changed"), "\(busy.stderr)")
        #expect(try CacheStatus(fixture.cacheDirectory).cached == before)
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data")
        #expect(files.count == 3, "\(files)")
        try fixture.unmount()
        let committed = try CacheStatus(fixture.cacheDirectory).cached
        #expect(committed[otherName] == otherSize && committed[fixture.name(1)] == sizes[1], "\(committed)")

        // A name that matches no feed: nothing cleared, the feeds listed.
        let unknown = try podfs(["cache", "clear", "No Such Show", "--cache-dir", fixture.cacheDirectory])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("Other Show") && unknown.stderr.contains(feedURL), "\(unknown.stderr)")
        #expect(try CacheStatus(fixture.cacheDirectory).cached == committed)

        // One feed by its title (any case): only its episodes go.
        let byTitle = try podfs(["cache", "clear", "other show", "--cache-dir", fixture.cacheDirectory])
        #expect(byTitle.status == 0, "\(byTitle.text) \(byTitle.stderr)")
        #expect(byTitle.text.contains("Cleared Other Show"), "\(byTitle.text)")
        var now = try CacheStatus(fixture.cacheDirectory).cached
        #expect(now[otherName] == 0 && now[fixture.name(0)] == sizes[0] && now[fixture.name(1)] == sizes[1], "\(now)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data").count == 2)

        // One feed by its URL.
        let byURL = try podfs(["cache", "clear", feedURL, "--cache-dir", fixture.cacheDirectory])
        #expect(byURL.status == 0, "\(byURL.text) \(byURL.stderr)")
        now = try CacheStatus(fixture.cacheDirectory).cached
        #expect(now.values.allSatisfy { $0 == 0 }, "\(now)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data").isEmpty)
        for index in sizes.indices { try fixture.checkIndex(index) }
        try fixture.checkIndex(file: "other1.mp3")

        // A remount lists everything and fetches it all again.
        try fixture.origin.reset()
        try fixture.mount(extra: ["\(fixture.origin.base)/feed2.xml"], waitFor: .paths(fixture.publishedPaths + [otherShow]))
        try readAll()
        #expect(try fixture.origin.bytesSent("ep2.mp3") >= Int64(sizes[1]))
        #expect(try fixture.origin.bytesSent("other1.mp3") >= Int64(otherSize))
        try fixture.unmount()

        // Everything, and a stray file too.
        try Harness.sh("head -c 5000 /dev/urandom > '\(fixture.cacheDirectory)/data/stray'")
        let all = try podfs(["cache", "clear", "--cache-dir", fixture.cacheDirectory])
        #expect(all.status == 0, "\(all.text) \(all.stderr)")
        #expect(all.text.contains("3 episodes"), "\(all.text)")
        #expect(try CacheStatus(fixture.cacheDirectory).cached.values.allSatisfy { $0 == 0 })
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data").isEmpty)
        let verified = try podfs(["cache", "verify", "--cache-dir", fixture.cacheDirectory])
        #expect(verified.status == 0, "\(verified.text)")
        let missing = try podfs(["cache", "clear", "--cache-dir", fixture.directory + "/nothing-here"])
        #expect(missing.status == 2 && missing.stderr.contains("there is no cache at"), "\(missing.stderr)")
    }
}
