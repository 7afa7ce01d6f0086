import Foundation
import Testing

/// Many feeds mounted at once: fetched concurrently, a hanging host delays
/// nothing, kept copies make a remount ready at once (also with no
/// network), and a feed's `Retry-After` is honoured.
@Suite(.serialized, .needsRoot)
struct FeedScaleTests {
    // MARK: - Helpers

    /// A feed named `name`.xml with one episode, titled "Show <name>".
    private static func publishFeed(_ fixture: Fixture, _ name: String) throws {
        try fixture.origin.put("\(name).mp3", Harness.bytes(count: 2000, seed: UInt64(name.utf8.count)))
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Show \(name)</title>
            <item><title>Only</title><guid>\(name)-1</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/\(name).mp3" length="2000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try fixture.origin.put("\(name).xml", Data(feed.utf8))
    }

    /// The folder and episode of each feed of `publishFeed` named `names`,
    /// as the mount lists them.
    private static func listed(_ names: [String]) -> Fixture.Listing {
        .paths(names.map { "Show \($0)/2026-11-01 Only.mp3" })
    }

    /// `podfs mount` of `urls` in the background; returns once it lists
    /// `waitFor` (the daemon is adopted by the fixture for cleanup).
    private static func mount(
        _ fixture: Fixture, _ urls: [String], extra: [String] = [], waitFor listing: Fixture.Listing
    ) throws {
        let output = try Harness.run(
            Harness.podfs, ["mount", "--cache-dir", fixture.cacheDirectory] + extra + urls + [fixture.mountpoint],
            timeout: 60)
        guard output.status == 0 else {
            throw HarnessError("podfs mount failed (\(output.status)): \(output.stderr)\nlog: \(fixture.log())")
        }
        if let pid = Fixture.daemonPID(in: output.text) {
            fixture.adopt(daemonPID: pid)
        }
        try fixture.waitUntilListed(listing)
    }

    /// The root's show folders (`Latest.m3u` is always there too).
    private static func shows(_ fixture: Fixture) throws -> Set<String> {
        let listed = Set(try Harness.sh("ls -1 '\(fixture.mountpoint)'").split(separator: "\n").map(String.init))
        return listed.contains("Latest.m3u") ? listed.subtracting(["Latest.m3u"]) : ["Latest.m3u missing"]
    }

    private static func status(_ fixture: Fixture) throws -> String {
        try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory], timeout: 30).text
    }

    // MARK: - Tests

    @Test func aHangingHostDelaysNoOtherFeedAndItsShowAppearsWhenItComes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        // The hanging feed comes first: one after another, it would hold
        // every other.
        let names = ["hang", "a", "b", "c"]
        for name in names { try Self.publishFeed(fixture, name) }
        // The hanging feed's host accepts and never answers until released.
        try fixture.origin.configure(#"{"hold_head": {"path": "/hang.xml", "seconds": 120}}"#)
        let refused = "http://127.0.0.1:1/refused.xml"
        let started = Date()
        try Self.mount(fixture, names.map { "\(fixture.origin.base)/\($0).xml" } + [refused], waitFor: .none)
        print("cold mount with a hanging feed ready after \(Date().timeIntervalSince(started)) s")
        // The shows that answer come while the held one stays held (far
        // longer than the wait): none of them waits for it.
        try fixture.waitUntilListed(Self.listed(["a", "b", "c"]))
        // Still held, and every other show is listed: it waited for nothing.
        #expect(try fixture.origin.held() == 1, "the hanging feed is still held by the origin")
        #expect(try Self.shows(fixture) == ["Show a", "Show b", "Show c"])
        let pending = try Self.status(fixture)
        #expect(pending.contains("pending"), "podfs status says the held feed is pending:\n\(pending)")
        #expect(pending.contains("refused.xml") && pending.contains("failed"), "\(pending)")
        #expect(try fixture.origin.held() == 1)
        // Let it answer: its show appears in the running mount.
        try fixture.origin.release()
        #expect(try Harness.eventually(30) { try Self.shows(fixture).contains("Show hang") })
        #expect(try fixture.origin.statuses("hang.xml") == [200])
        let after = try Self.status(fixture)
        #expect(after.contains("4 ok") && after.contains("1 failed"), "summary line:\n\(after)")
        try fixture.unmount()
    }

    @Test func aRemountIsReadyFromKeptCopiesWhileTheFeedsAreHeldAndWithNoNetwork() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let names = ["one", "two", "three"]
        for name in names { try Self.publishFeed(fixture, name) }
        let urls = names.map { "\(fixture.origin.base)/\($0).xml" }
        try Self.mount(fixture, urls, waitFor: Self.listed(names))
        let expected: Set<String> = ["Show one", "Show two", "Show three"]
        #expect(try Self.shows(fixture) == expected)
        try fixture.unmount()

        // Every feed request is held: the remount cannot have waited for one.
        try fixture.origin.reset()
        try fixture.origin.configure(#"{"hold_head": {"path": "*", "seconds": 120}}"#)
        // What the mount shows the moment it returns is the point here.
        try Self.mount(fixture, urls, waitFor: .none)
        #expect(try Harness.eventually(10) { try fixture.origin.held() == 3 }, "the revalidations reached the origin")
        #expect(try Self.shows(fixture) == expected, "ready from the kept copies while all three are held")
        #expect(try fixture.origin.held() == 3)
        try fixture.unmount()
        try fixture.origin.release()

        // No network at all: the origin is gone.
        fixture.origin.stop()
        try Self.mount(fixture, urls, waitFor: .none)
        #expect(try Self.shows(fixture) == expected)
        #expect(
            try Harness.sh("ls '\(fixture.mountpoint)/Show two'").contains("2026-11-01 Only.mp3"),
            "the episodes are listed from the kept copy")
        try fixture.unmount()
    }

    @Test func aFeedsRetryAfterIsHonouredBeforeItIsAskedAgain() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        for name in ["busy", "calm"] { try Self.publishFeed(fixture, name) }
        try fixture.origin.configure(#"{"status": {"/busy.xml": {"code": 429, "count": 1, "retry_after": 2}}}"#)
        // "busy" comes after its Retry-After, which the test waits for.
        let urls = ["busy", "calm"].map { "\(fixture.origin.base)/\($0).xml" }
        try Self.mount(fixture, urls, waitFor: Self.listed(["calm"]))
        #expect(try Harness.eventually(30) { try Self.shows(fixture).contains("Show busy") })
        #expect(try fixture.origin.statuses("busy.xml") == [429, 200])
        let times = try fixture.origin.statusTimes("busy.xml")
        #expect(times.count == 2)
        if times.count == 2 {
            print("busy.xml asked again \(times[1] - times[0]) s after its 429 with Retry-After: 2")
            // The origin's own clock: the second request came no earlier
            // than it asked (its clock has millisecond steps).
            #expect(times[1] - times[0] >= 1.999)
        }
        try fixture.unmount()
    }

    @Test func aFeedThatMovesBy301OrByNewFeedURLKeepsItsFolderAndIsAskedThereFromThenOn() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        for name in ["moved", "named", "temp"] { try Self.publishFeed(fixture, name) }
        // "named" says where it lives now; its new home lists one more episode.
        let named = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
            <title>Show named</title><itunes:new-feed-url>{{BASE}}/named-home.xml</itunes:new-feed-url>
            <item><title>Only</title><guid>named-1</guid><pubDate>Sun, 01 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/named.mp3" length="2000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try fixture.origin.put("named.xml", Data(named.utf8))
        let home = named.replacingOccurrences(of: "<itunes:new-feed-url>{{BASE}}/named-home.xml</itunes:new-feed-url>", with: "")
            .replacingOccurrences(of: "</channel>", with: """
                <item><title>Second</title><guid>named-2</guid><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
                <enclosure url="{{BASE}}/named.mp3" length="2000" type="audio/mpeg"/></item></channel>
                """)
        try fixture.origin.put("named-home.xml", Data(home.utf8))
        try fixture.origin.put("moved-home.xml", try Data(contentsOf: URL(fileURLWithPath: fixture.origin.root + "/moved.xml")))
        try fixture.origin.put("temp-home.xml", try Data(contentsOf: URL(fileURLWithPath: fixture.origin.root + "/temp.xml")))
        try fixture.origin.configure(#"""
            {"status": {"/moved.xml": {"code": 301, "location": "/moved-home.xml"},
                        "/temp.xml": {"code": 302, "location": "/temp-home.xml"}}}
            """#)
        let urls = ["moved", "named", "temp"].map { "\(fixture.origin.base)/\($0).xml" }
        let moved = Fixture.Listing.paths(
            ["Show moved/2026-11-01 Only.mp3", "Show named/2026-11-02 Second.mp3", "Show temp/2026-11-01 Only.mp3"])
        try Self.mount(fixture, urls, waitFor: moved)
        let expected: Set<String> = ["Show moved", "Show named", "Show temp"]
        #expect(try Self.shows(fixture) == expected)
        #expect(
            try Harness.sh("ls '\(fixture.mountpoint)/Show named'").contains("2026-11-02 Second.mp3"),
            "the feed at the new-feed-url is the one listed")
        let before = try Harness.sha256(fixture.mountpoint + "/Show moved/2026-11-01 Only.mp3")
        try fixture.unmount()

        // From now on: the moved feeds are asked for at their new URLs only.
        try fixture.origin.reset()
        try Self.mount(fixture, urls, waitFor: moved)
        #expect(try Harness.eventually(20) { try fixture.origin.requests("named-home.xml") >= 1 })
        #expect(try Harness.eventually(20) { try fixture.origin.requests("moved-home.xml") >= 1 })
        #expect(try Harness.eventually(20) { try fixture.origin.requests("temp-home.xml") >= 1 })
        #expect(try fixture.origin.requests("moved.xml") == 0, "a 301 is remembered")
        #expect(try fixture.origin.requests("named.xml") == 0, "a new-feed-url that gave a feed is remembered")
        #expect(try fixture.origin.requests("temp.xml") == 1, "a 302 is not a move")
        #expect(try Self.shows(fixture) == expected, "each show keeps its folder")
        // The folder kept its cache: the episode read before costs the origin nothing.
        let sent = try fixture.origin.bytesSent("moved.mp3")
        #expect(try Harness.sha256(fixture.mountpoint + "/Show moved/2026-11-01 Only.mp3") == before)
        #expect(try fixture.origin.bytesSent("moved.mp3") <= sent + 1)
        try fixture.unmount()
    }
}
