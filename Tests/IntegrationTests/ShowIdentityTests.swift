import Foundation
import Testing

/// Shows are known by `podcast:guid` (docs/DESIGN.md, "The cache on disk",
/// keys): a show subscribed at another URL with the same guid keeps its
/// cache, and a cache made when the feed had no guid is taken over when it
/// gets one. Each read is checked against the origin's bytes and costs the
/// origin no byte of the episode.
@Suite(.serialized, .needsRoot)
struct ShowIdentityTests {
    // MARK: - Helpers

    private static let guid = "917393e3-1b1e-5cef-ace4-edaa54e1f810"
    private static let size = 3 * 1024 * 1024 + 12_345
    private static let episodePath = "2026-11-01 Only.mp3"

    /// A feed at `path` listing `ep.mp3`, with `guid` as its `podcast:guid`
    /// and, when `second`, a second episode.
    private static func publishFeed(_ fixture: Fixture, _ path: String, guid: String?, second: Bool = false) throws {
        let guidElement = guid.map { "<podcast:guid>\($0)</podcast:guid>" } ?? ""
        let more = second
            ? """
            <item><title>Second</title><guid>show-2</guid><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/ep2.mp3" length="2000" type="audio/mpeg"/></item>
            """ : ""
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel>
            <title>Show</title>\(guidElement)
            <item><title>Only</title><guid>show-1</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/ep.mp3" length="\(size)" type="audio/mpeg"/></item>
            \(more)</channel></rss>
            """
        try fixture.origin.put(path, Data(feed.utf8))
    }

    /// `podfs mount` of `url` in the background; returns once it lists the
    /// show's first episode (every version of the feed has it).
    private static func mount(_ fixture: Fixture, _ url: String) throws {
        let output = try Harness.run(
            Harness.podfs, ["mount", "--cache-dir", fixture.cacheDirectory, url, fixture.mountpoint], timeout: 60)
        guard output.status == 0 else {
            throw HarnessError("podfs mount failed (\(output.status)): \(output.stderr)\nlog: \(fixture.log())")
        }
        if let pid = Fixture.daemonPID(in: output.text) {
            fixture.adopt(daemonPID: pid)
        }
        try fixture.waitUntilListed(.paths(["Show/" + episodePath]))
    }

    private static func episodeHash(_ fixture: Fixture) throws -> String {
        try Harness.sha256(fixture.mountpoint + "/Show/" + episodePath)
    }

    /// Whether the origin sent no byte of the episode but the one byte of
    /// the check every open of a cached episode makes (a range request
    /// with `If-Range`, guarantee 3): with nothing cached it would send all.
    private static func onlyTheOpensCheck(_ fixture: Fixture) throws -> Bool {
        let ranges = try fixture.origin.ranges("ep.mp3")
        print("ShowIdentityTests: ep.mp3 requests \(ranges), bytes \(try fixture.origin.bytesSent("ep.mp3"))")
        return try fixture.origin.bytesSent("ep.mp3") <= 1 && ranges.allSatisfy { $0 == "bytes=0-0" }
    }

    private static func status(_ fixture: Fixture) throws -> String {
        try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30).text
    }

    // MARK: - Tests

    @Test func aShowSubscribedAtAnotherURLWithTheSameGUIDKeepsItsCache() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.origin.put("ep.mp3", Harness.bytes(count: Self.size, seed: 21))
        try Self.publishFeed(fixture, "a/feed.xml", guid: Self.guid)
        // The same show at a new host: the user edited the SOURCE, no redirect.
        try Self.publishFeed(fixture, "b/show.rss", guid: Self.guid.uppercased())
        let expected = try Harness.sha256(fixture.origin.root + "/ep.mp3")

        try Self.mount(fixture, "\(fixture.origin.base)/a/feed.xml")
        #expect(try Self.episodeHash(fixture) == expected)
        let first = try fixture.origin.bytesSent("ep.mp3")
        #expect(first >= Int64(Self.size), "the first read came from the origin")
        try fixture.unmount()

        try fixture.origin.reset()
        try Self.mount(fixture, "\(fixture.origin.base)/b/show.rss")
        #expect(try Self.episodeHash(fixture) == expected)
        let second = try fixture.origin.bytesSent("ep.mp3")
        print("ShowIdentityTests: origin bytes for ep.mp3: first mount \(first), at the new URL \(second)")
        #expect(try Self.onlyTheOpensCheck(fixture), "the episode is served from the cache made under the old URL")
        #expect(try fixture.origin.requests("a/feed.xml") == 0)
        // Registered under the URL it is subscribed by now.
        let status = try Self.status(fixture)
        #expect(status.contains(Self.episodePath))
        try fixture.unmount()
    }

    @Test func aCacheMadeBeforeTheFeedHadAGUIDIsTakenOverWhenItGetsOne() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.origin.put("ep.mp3", Harness.bytes(count: Self.size, seed: 22))
        try fixture.origin.put("ep2.mp3", Harness.bytes(count: 2000, seed: 23))
        try Self.publishFeed(fixture, "feed.xml", guid: nil)
        let expected = try Harness.sha256(fixture.origin.root + "/ep.mp3")
        let url = "\(fixture.origin.base)/feed.xml"

        // A cache keyed by the feed URL, as podfs made it before.
        try Self.mount(fixture, url)
        #expect(try Self.episodeHash(fixture) == expected)
        try fixture.unmount()
        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data")

        // The feed gets a guid. The mount lists its kept copy (no guid yet)
        // and keeps the show's keys while it runs; the copy it fetches, with
        // the guid, is the one the next mount starts from.
        try Self.publishFeed(fixture, "feed.xml", guid: Self.guid, second: true)
        try Self.mount(fixture, url)
        #expect(
            try Harness.eventually(30) {
                try Harness.sh("ls '\(fixture.mountpoint)/Show'").contains("2026-11-02 Second.mp3")
            }, "the feed with the guid landed")
        try fixture.unmount()
        #expect(!fixture.log().contains("moved cached episodes"), "nothing moved while the show was in the tree")

        try fixture.origin.reset()
        try Self.mount(fixture, url)
        #expect(try Self.episodeHash(fixture) == expected)
        let sent = try fixture.origin.bytesSent("ep.mp3")
        print("ShowIdentityTests: origin bytes for ep.mp3 after the cache was moved to the guid's keys: \(sent)")
        #expect(try Self.onlyTheOpensCheck(fixture), "the cache made under the URL's keys serves the episode")
        #expect(fixture.log().contains("moved cached episodes"), "the episode was moved to its guid key")
        let filesAfter = try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory + "/data")
        #expect(Set(filesAfter).isDisjoint(with: filesBefore), "every file has its new name, none is left behind")
        try fixture.unmount()
    }
}
