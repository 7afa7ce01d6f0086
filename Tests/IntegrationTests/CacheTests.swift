import Foundation
import Testing

/// The cache's size cap: least recently read episodes are evicted first,
/// never an open one, and an evicted episode reads correctly again.
@Suite(.serialized, .needsRoot)
struct CacheTests {
    private static let mib = 1024 * 1024

    /// Cached bytes per episode file name, from `podfs status --json`.
    private func cached(_ fixture: Fixture) throws -> [String: Int] {
        let json = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory, "--json"])
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        var result: [String: Int] = [:]
        for feed in object?["feeds"] as? [[String: Any]] ?? [] {
            for episode in feed["episodes"] as? [[String: Any]] ?? [] {
                if let name = episode["name"] as? String { result[name] = (episode["cachedBytes"] as? NSNumber)?.intValue }
            }
        }
        return result
    }

    @Test func leastRecentlyReadEpisodesAreEvictedButNeverAnOpenOne() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 6 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size, size, size]))
        try fixture.mount(extra: ["--cache-size", "14M"])
        let names = (1...3).map { "2026-11-0\($0) Episode \($0).mp3" }
        for index in 0..<3 {
            try Harness.sh("cat '\(fixture.path(index))' > /dev/null")
            // Committed, and the next episode is read in a later second
            // (last reads are kept in seconds). The third read puts the
            // cache over its cap: the least recently read goes.
            let settled = Harness.eventually(60) {
                guard let entry = try? CacheStatus(fixture.cacheDirectory)[names[index]], let readAt = entry.lastRead
                else { return false }
                return entry.cachedBytes == size && Int(Date().timeIntervalSince1970) > readAt
            }
            #expect(settled, "episode \(index + 1) was committed")
        }
        #expect(Harness.eventually(60) { (try? cached(fixture))?[names[0]] == 0 }, "an eviction happened")
        var now = try cached(fixture)
        #expect(now[names[0]] == 0, "the least recently read is evicted: \(now)")
        #expect(now[names[1]] == size && now[names[2]] == size, "\(now)")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data")
        #expect(files.count == 2, "the evicted episode's file is deleted: \(files)")
        let usage = try Harness.sh("du -k '\(fixture.cacheDirectory)/data' | tail -1").split(separator: "\t").first
        #expect((Int(usage ?? "") ?? .max) <= 14 * 1024, "the cache is under its cap on disk: \(usage ?? "")")

        // Episode 2 is now the least recently read, but it is open: episode 3 goes instead.
        let holder = try FileHolder(fixture.path(1), seconds: 30)
        // The holder has the episode open once its shell has exec'd sleep.
        #expect(Harness.eventually {
            ((try? String(contentsOfFile: "/proc/\(holder.pid)/comm", encoding: .utf8)) ?? "").hasPrefix("sleep")
        })
        try fixture.origin.reset()
        let copy = fixture.directory + "/copy"
        // O_DIRECT: the kernel's page cache may still hold the pages (that
        // is fine); this read must go through podfs.
        try Harness.sh("dd if='\(fixture.path(0))' iflag=direct bs=1M status=none > '\(copy)'")
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)), "an evicted episode reads again")
        let refetched = try fixture.origin.bytesSent("ep1.mp3")
        #expect(refetched >= Int64(size), "it was fetched again")
        // Until the refetched episode is committed and the eviction it
        // caused is done.
        let evicted = Harness.eventually(60) {
            let state = (try? cached(fixture)) ?? [:]
            return state[names[0]] == size && state[names[2]] == 0
        }
        now = try cached(fixture)
        #expect(evicted, "an eviction happened while episode 2 was open: \(now)")
        #expect(now[names[1]] == size, "an open episode is never evicted: \(now)")
        #expect(now[names[2]] == 0, "the next least recently read goes instead: \(now)")
        #expect(now[names[0]] == size, "\(now)")
        let onDisk = try Harness.sh("du -k '\(fixture.cacheDirectory)/data' | tail -1").split(separator: "\t").first ?? ""
        print(
            "eviction figures: cap 14 MiB, 3 episodes of \(size) bytes; data on disk after the first round "
                + "\(usage ?? "") KiB, after the second \(onDisk) KiB; origin bytes to refetch the evicted episode \(refetched)")
        let status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        #expect(status.text.contains("cap used"), "status shows the cap: \(status.text)")
        holder.stop()
        try fixture.unmount()
    }
}
