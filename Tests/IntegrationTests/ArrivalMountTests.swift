import Foundation
import Testing

/// A cold mount lists each feed's show as the feed arrives and builds it in
/// the background or when something looks into it (`Catalog.listArrived`,
/// `ArrivalBuilds`): the root lists every show, the root's `Latest.m3u`
/// fills with no show looked into, and a show's folder is whole when listed.
@Suite(.serialized, .needsRoot)
struct ArrivalMountTests {
    @Test func showsListedOnArrivalAreBuiltInTheBackgroundAndWholeWhenListed() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        // Dated today: `Latest.m3u` lists the last two weeks.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let today = formatter.string(from: Date().addingTimeInterval(-3600))
        formatter.dateFormat = "yyyy-MM-dd"
        let day = formatter.string(from: Date().addingTimeInterval(-3600))
        try fixture.publish(Fixture.episodes(sizes: [3000, 4000, 5000]).map { episode in
            var episode = episode
            episode.date = today
            return episode
        })
        let beta = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Beta</title>
            <item><title>Only</title><guid>b1</guid><pubDate>\(today)</pubDate>
            <enclosure url="{{BASE}}/ep1.mp3" length="3000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try fixture.origin.put("beta.xml", Data(beta.utf8))
        // Nothing is looked into: the mount only waits for the root.
        try fixture.mount(extra: ["\(fixture.origin.base)/beta.xml"], waitFor: .none)
        var root = ""
        #expect(Harness.eventually(20) {
            root = (try? Harness.sh("ls -1 '\(fixture.mountpoint)'")) ?? ""
            return root == "Beta\nLatest.m3u\n\(Fixture.showTitle)\n"
        }, "\(root)")
        // Both arrived and were listed before they were built.
        let log = fixture.log()
        #expect(log.components(separatedBy: "feed listed").count - 1 == 2, "\(log)")

        // The background pass builds both: `Latest.m3u` (which builds
        // nothing) comes to list an episode of each.
        var latest = ""
        #expect(Harness.eventually(20) {
            latest = (try? Harness.sh("cat '\(fixture.mountpoint)/Latest.m3u'")) ?? ""
            return latest.contains("\nBeta/\(day) Only.mp3\n") && latest.contains("\n\(Fixture.showTitle)/")
        }, "\(latest)")

        // A show's folder is whole, and its files read.
        let listed = try Harness.sh("ls -1 '\(fixture.mountpoint)/\(Fixture.showTitle)'")
        #expect(listed.split(separator: "\n").filter { $0.hasSuffix(".mp3") }.count == 3, "\(listed)")
        #expect(FileManager.default.contents(atPath: fixture.path(2)) == fixture.episodes[2].data)
        try fixture.unmount()
    }

    /// A remount that builds its shows from their kept copies (the
    /// kept-copy pass) while a feed new to it arrives: the pass, when it
    /// ends, leaves the new show's placeholder to its own build.
    @Test func aFeedNewToARemountStaysListedWhenTheKeptCopyPassEnds() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3000]))
        // Forty more shows: the pass that builds them from their kept copies
        // on the remount outlasts the new feed's arrival.
        var extra: [String] = []
        for show in 0..<40 {
            let items = (0..<50).map { item in
                "<item><title>E\(item)</title><guid>s\(show)e\(item)</guid>"
                    + "<enclosure url=\"{{BASE}}/ep1.mp3?s=\(show)&amp;e=\(item)\" length=\"3000\" type=\"audio/mpeg\"/></item>"
            }
            let feed = "<rss version=\"2.0\"><channel><title>Show \(show)</title>\(items.joined())</channel></rss>"
            try fixture.origin.put("s\(show).xml", Data(feed.utf8))
            extra.append("\(fixture.origin.base)/s\(show).xml")
        }
        try fixture.mount(extra: extra)
        try fixture.unmount()
        let beta = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Beta</title>
            <item><title>Only</title><guid>b1</guid><pubDate>Mon, 02 Nov 2026 11:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/ep1.mp3" length="3000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try fixture.origin.put("beta.xml", Data(beta.utf8))
        try fixture.mount(extra: extra + ["\(fixture.origin.base)/beta.xml"], waitFor: .none)
        // Long after the pass ended and the arrival's build was due, the
        // root still lists it, and its folder holds its episode.
        Thread.sleep(forTimeInterval: 2)
        let root = try Harness.sh("ls -1 '\(fixture.mountpoint)'").split(separator: "\n")
        #expect(root.count == 43 && root.contains("Beta"), "\(root)")
        let listed = (try? Harness.sh("ls -1 '\(fixture.mountpoint)/Beta'")) ?? ""
        #expect(listed.contains("2026-11-02 Only.mp3"), "\(listed)")
        try fixture.unmount()
    }
}
