import Foundation
import Testing

/// `podfs subscribe`, `unsubscribe` and `subscriptions` against a real mount
/// and a real origin: shows come and go with no remount, open files read
/// on, the list file is the truth and is watched, and bad input changes
/// nothing.
@Suite(.serialized, .needsRoot)
struct SubscriptionTests {
    // MARK: - Helpers

    /// A one-episode feed called `title` whose enclosure is `file`.
    private static func feed(_ title: String, file: String) -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(title)</title><link>http://example.org/</link>
            <item><title>Only</title><guid>\(file)</guid><pubDate>Sun, 22 Nov 2026 10:00:00 GMT</pubDate>
            <enclosure url="{{BASE}}/\(file)" length="200000" type="audio/mpeg"/></item>
            </channel></rss>
            """.utf8)
    }

    private static func podfs(_ arguments: [String]) throws -> Harness.Output {
        try Harness.run(Harness.podfs, arguments, timeout: 90)
    }

    /// The show folders in the root (`Latest.m3u` left out).
    private static func root(_ fixture: Fixture) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint).filter { $0 != "Latest.m3u" }.sorted()
    }

    private static func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    // MARK: - Tests

    @Test func subscribeAndUnsubscribeOnALiveMountWithAFileOpen() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [50_000]))
        let second = Harness.bytes(count: 200_000, seed: 77)
        try fixture.origin.put("second.mp3", second)
        try fixture.origin.put("second.xml", Self.feed("Second Show", file: "second.mp3"))
        try fixture.mount()
        let cache = ["--cache-dir", fixture.cacheDirectory]
        #expect(try Self.root(fixture) == [Fixture.showTitle])

        // Subscribed: the folder is there when the command returns.
        let started = Date()
        let added = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/second.xml"])
        let took = Date().timeIntervalSince(started)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.text.contains("subscribed: Second Show"))
        #expect(try Self.root(fixture) == ["Second Show", Fixture.showTitle])
        print("subscribe on a live mount: the folder listed \(String(format: "%.3f", took)) s after the command began")
        #expect(try fixture.origin.requests("second.xml") >= 1)
        let list = Self.text(fixture.cacheDirectory + "/subscriptions.txt")
        #expect(list.contains("\(fixture.origin.base)/second.xml"))

        // A file open in it reads on after the unsubscribe (plain read(2)
        // into an array: nothing maps the file, so nothing holds the mount
        // once it is closed).
        let path = "\(fixture.mountpoint)/Second Show/2026-11-22 Only.mp3"
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0, "the episode opens")
        var read: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let first = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, 1000) }
        if first > 0 { read += buffer[..<first] }
        // A folder's name in another case names it (one show has it).
        let removed = try Self.podfs(["unsubscribe"] + cache + ["second show"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.text.contains("unsubscribed: Second Show"))
        #expect(try Self.root(fixture) == [Fixture.showTitle], "the folder leaves the listing at once")
        #expect(!FileManager.default.fileExists(atPath: path))
        while true {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard got > 0 else { break }
            read += buffer[..<got]
        }
        close(fd)
        #expect(read == [UInt8](second), "the open file reads on to its end")
        #expect(try fixture.origin.bytesSent("second.mp3") <= Int64(second.count), "no byte fetched twice")
        #expect(!Self.text(fixture.cacheDirectory + "/subscriptions.txt").contains("second.xml"))

        // The same mount command after an unmount gives the same shows.
        try fixture.unmount()
        try fixture.mount()
        #expect(try Self.root(fixture) == [Fixture.showTitle], "what was removed stays out")
        let again = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/second.xml"])
        #expect(again.status == 0, "\(again.stderr)")
        try fixture.unmount()
        try fixture.mount(waitFor: .paths(fixture.publishedPaths + ["Second Show/2026-11-22 Only.mp3"]))
        #expect(try Self.root(fixture) == ["Second Show", Fixture.showTitle], "what was added is in")
        // The same feed in another spelling is not a second show.
        let spelled = "HTTP://\(fixture.origin.host):\(fixture.origin.port)/second.xml?"
        let twice = try Self.podfs(["subscribe"] + cache + [spelled])
        #expect(twice.status == 0 && twice.text.contains("already subscribed"), "\(twice.text) \(twice.stderr)")
        #expect(try Self.root(fixture) == ["Second Show", Fixture.showTitle], "one folder for one feed")
        let listed = try Self.podfs(["subscriptions"] + cache)
        #expect(listed.text.contains("Second Show") && listed.text.contains("\(fixture.origin.base)/second.xml"))
        let opml = try Self.podfs(["subscriptions", "--opml"] + cache)
        #expect(opml.text.contains(#"xmlUrl="\#(fixture.origin.base)/second.xml""#))
        #expect(opml.text.contains("<opml version=\"2.0\">"))
    }

    /// The first thing a new user may run: `podfs subscribe` before any
    /// mount made the cache. It makes it (private), and the list has the
    /// show.
    @Test func aFirstSubscribeBeforeAnyMountMakesTheCache() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        let fresh = fixture.directory + "/new/podfs"
        let added = try Self.podfs(["subscribe", "--cache-dir", fresh, "\(fixture.origin.base)/feed.xml"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.text.contains("subscribed: \(Fixture.showTitle)"), "\(added.text)")
        #expect(Self.text(fresh + "/subscriptions.txt").contains("\(fixture.origin.base)/feed.xml"))
        var info = stat()
        #expect(stat(fresh, &info) == 0 && info.st_mode & 0o777 == 0o700, "the cache is private")
        #expect(Self.text(fresh + "/subscriptions.txt") == "\(fixture.origin.base)/feed.xml # \(Fixture.showTitle)\n")
        let listed = try Self.podfs(["subscriptions", "--cache-dir", fresh])
        #expect(listed.status == 0 && listed.text.contains("1 subscription in \(fresh)/subscriptions.txt"), "\(listed.text) \(listed.stderr)")
        // No mount has built the show yet: the list's title names it.
        #expect(listed.text.contains(Fixture.showTitle) && !listed.text.contains("not loaded yet"), "\(listed.text)")
        let removed = try Self.podfs(["unsubscribe", "--cache-dir", fresh, Fixture.showTitle.uppercased()])
        #expect(removed.status == 0 && removed.text.contains("unsubscribed: \(Fixture.showTitle)"), "\(removed.text) \(removed.stderr)")
        #expect(Self.text(fresh + "/subscriptions.txt").isEmpty)
    }

    /// An OPML cut short mounts what it lists before the damage, and the
    /// mount says the file is damaged and feeds may be missing.
    @Test func aDamagedOPMLMountsWhatItListsAndSaysSo() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        let opml = fixture.directory + "/shows.opml"
        try Data(
            (#"<opml version="2.0"><body><outline text="a" xmlUrl="\#(fixture.origin.base)/feed.xml"/>"#
                + #"<outline text="b" xmlUrl="\#(fixture.origin.base)/second"#).utf8
        ).write(to: URL(fileURLWithPath: opml))
        let output = try Harness.run(
            Harness.podfs, ["mount", "--cache-dir", fixture.cacheDirectory, opml, fixture.mountpoint], timeout: 90)
        if let pid = Fixture.daemonPID(in: output.text) { fixture.adopt(daemonPID: pid) }
        #expect(output.status == 0, "\(output.stderr)")
        #expect(
            output.stderr.contains("warning: \(opml) is not well-formed XML")
                && output.stderr.contains("feeds after that point may be missing"), "\(output.stderr)")
        #expect(try Self.root(fixture) == [Fixture.showTitle])
        try fixture.unmount()
    }

    /// A feed taken out of the list by hand while unmounted no longer
    /// counts in `podfs status` after the next mount.
    @Test func aFeedRemovedByHandLeavesTheStatusAtTheNextMount() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        let status = { (try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text) ?? "" }
        let list = fixture.cacheDirectory + "/subscriptions.txt"
        try fixture.mount()
        let missing = try Self.podfs(["subscribe", "--cache-dir", fixture.cacheDirectory, "\(fixture.origin.base)/gone.xml"])
        #expect(missing.status == 1, "a 404 is not added by subscribe: \(missing.stderr)")
        try fixture.unmount()
        // By hand: a feed that fails, then taken out again.
        try Data((Self.text(list) + "\(fixture.origin.base)/gone.xml\n").utf8).write(to: URL(fileURLWithPath: list))
        try fixture.mount()
        #expect(Harness.eventually(30) { status().contains("1 failed") }, "\(status())")
        try fixture.unmount()
        try Data(Self.text(list).replacingOccurrences(of: "\(fixture.origin.base)/gone.xml\n", with: "").utf8)
            .write(to: URL(fileURLWithPath: list))
        try fixture.mount()
        #expect(status().contains("Feeds: 1 ok, 0 pending, 0 failed"), "\(status())")
        try fixture.unmount()
    }

    @Test func aWebPageIsFollowedToItsFeedAndBadSourcesAddNothing() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        try fixture.origin.put("linked.mp3", Harness.bytes(count: 200_000, seed: 5))
        try fixture.origin.put("linked.xml", Self.feed("Linked Show", file: "linked.mp3"))
        try fixture.origin.put(
            "show.html",
            Data(
                """
                <!DOCTYPE html><html><head><title>A show</title>
                <link rel="stylesheet" href="/style.css">
                <link rel="alternate" type="application/rss+xml" title="Feed" href="/linked.xml">
                </head><body><p>Listen!</p></body></html>
                """.utf8))
        try fixture.origin.put("plain.html", Data("<!doctype html><html><head></head><body>no feed</body></html>".utf8))
        try fixture.origin.put("garbage.xml", Data("<rss><channel><title>broken".utf8))
        try fixture.mount()
        let cache = ["--cache-dir", fixture.cacheDirectory]
        let before = Self.text(fixture.cacheDirectory + "/subscriptions.txt")

        for (source, says) in [
            ("missing.xml", "404"), ("plain.html", "links no feed"), ("garbage.xml", "is not a feed"),
        ] {
            let output = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/\(source)"])
            #expect(output.status == 1, "\(source) must fail")
            #expect(output.stderr.contains(says), "\(source): \(output.stderr)")
            #expect(output.stderr.split(separator: "\n").count == 1, "one line: \(output.stderr)")
            #expect(try fixture.origin.requests(source) >= 1, "\(source) was really asked")
        }
        // An OPML of 10,000 feeds, and one that declares entities.
        let many = (0..<10_000).map { #"<outline xmlUrl="http://127.0.0.1:9/\#($0).xml"/>"# }.joined()
        let manyPath = fixture.directory + "/many.opml"
        try #"<?xml version="1.0"?><opml version="2.0"><body>\#(many)</body></opml>"#
            .write(toFile: manyPath, atomically: true, encoding: .utf8)
        let tooMany = try Self.podfs(["subscribe"] + cache + [manyPath])
        #expect(tooMany.status == 1)
        #expect(tooMany.stderr.contains("10000 feeds at once is more than podfs subscribe takes"), "\(tooMany.stderr)")
        let bombPath = fixture.directory + "/bomb.opml"
        try """
            <?xml version="1.0"?><!DOCTYPE opml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>
            <opml version="2.0"><body><outline text="&b;" xmlUrl="\(fixture.origin.base)/linked.xml"/></body></opml>
            """.write(toFile: bombPath, atomically: true, encoding: .utf8)
        let bomb = try Self.podfs(["subscribe"] + cache + [bombPath])
        #expect(bomb.status == 1)
        #expect(bomb.stderr.contains("is not an OPML file or a list of URLs"), "\(bomb.stderr)")

        // With a good SOURCE beside a bad one, nothing is added either.
        let mixed = try Self.podfs(
            ["subscribe"] + cache + ["\(fixture.origin.base)/linked.xml", "\(fixture.origin.base)/missing.xml"])
        #expect(mixed.status == 1)
        #expect(try Self.root(fixture) == [Fixture.showTitle])
        #expect(Self.text(fixture.cacheDirectory + "/subscriptions.txt") == before, "the list is unchanged")

        let page = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/show.html"])
        #expect(page.status == 0, "\(page.stderr)")
        #expect(page.text.contains("subscribed: Linked Show (\(fixture.origin.base)/linked.xml)"))
        #expect(try Self.root(fixture) == ["Linked Show", Fixture.showTitle])
        #expect(Self.text(fixture.cacheDirectory + "/subscriptions.txt").contains("/linked.xml"))
        #expect(!Self.text(fixture.cacheDirectory + "/subscriptions.txt").contains("show.html"))

        // Another user cannot change the mount: the cache keeps them out,
        // and were its modes loosened, the socket's peer check still would.
        let url = "\(fixture.origin.base)/linked.xml"
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", Harness.podfs, "unsubscribe"] + cache + [url]
        let refused = try Harness.run("setpriv", asNobody, timeout: 60)
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("Permission denied"), "\(refused.stderr)")
        // Every folder on the way opened to others for the second try (the
        // test run's own temporary folder is 0700 too), then closed again.
        var opened: [(String, mode_t)] = []
        var folder = fixture.cacheDirectory
        while folder != "/" && !folder.isEmpty {
            var info = stat()
            if stat(folder, &info) == 0, info.st_mode & 0o001 == 0 {
                opened.append((folder, info.st_mode & 0o7777))
                chmod(folder, (info.st_mode & 0o7777) | 0o005)
            }
            folder = (folder as NSString).deletingLastPathComponent
        }
        defer { for (path, mode) in opened { chmod(path, mode) } }
        chmod(fixture.cacheDirectory + "/control.sock", 0o777)
        let checked = try Harness.run("setpriv", asNobody, timeout: 60)
        #expect(checked.status == 1, "\(checked.stderr)")
        #expect(checked.stderr.contains("only the user who mounted podfs"), "\(checked.stderr)")
        #expect(try Self.root(fixture) == ["Linked Show", Fixture.showTitle])

        let unknown = try Self.podfs(["unsubscribe"] + cache + ["No Such Show"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no subscription is No Such Show"))
        #expect(try Self.root(fixture) == ["Linked Show", Fixture.showTitle])
    }

    @Test func theSourceFileIsTheListAndItsEditsAreSeenWithoutARemount() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        for name in ["b", "c"] {
            try fixture.origin.put("\(name).mp3", Harness.bytes(count: 200_000, seed: 9))
            try fixture.origin.put("\(name).xml", Self.feed("Show \(name.uppercased())", file: "\(name).mp3"))
        }
        let listPath = fixture.directory + "/shows.txt"
        let original = "# my shows\n\(fixture.origin.base)/feed.xml\n\n# added by podfs below\n"
        try original.write(toFile: listPath, atomically: true, encoding: .utf8)
        let mount = try Self.podfs(["mount", "--cache-dir", fixture.cacheDirectory, listPath, fixture.mountpoint])
        #expect(mount.status == 0, "\(mount.stderr)")
        if let pid = Fixture.daemonPID(in: mount.text) {
            fixture.adopt(daemonPID: pid)
        }
        try fixture.waitUntilListed(.published)
        let cache = ["--cache-dir", fixture.cacheDirectory]

        // The command edits the file, keeping its comments.
        let added = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/b.xml"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(Self.text(listPath) == original + "\(fixture.origin.base)/b.xml # Show B\n")

        // An edit by hand, as an editor saves (a new file renamed over).
        let started = Date()
        let edited = Self.text(listPath) + "\(fixture.origin.base)/c.xml\n"
        try edited.write(toFile: listPath, atomically: true, encoding: .utf8)
        #expect(Harness.eventually(10) { (try? Self.root(fixture))?.contains("Show C") == true })
        print("an added line seen after \(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        let removedLine = Self.text(listPath).replacingOccurrences(of: "\(fixture.origin.base)/b.xml # Show B\n", with: "")
        try removedLine.write(toFile: listPath, atomically: false, encoding: .utf8)
        #expect(Harness.eventually(10) { (try? Self.root(fixture))?.contains("Show B") == false })
        #expect(try Self.root(fixture) == ["Show C", Fixture.showTitle])

        // Without a mount, the commands change the file the next mount reads.
        try fixture.unmount()
        let offline = try Self.podfs(["unsubscribe"] + cache + ["\(fixture.origin.base)/c.xml"])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(Self.text(listPath) == original)
        let offlineAdd = try Self.podfs(["subscribe"] + cache + ["\(fixture.origin.base)/b.xml"])
        #expect(offlineAdd.status == 0, "\(offlineAdd.stderr)")
        #expect(offlineAdd.text.contains("the next mount lists it"))
        let remount = try Self.podfs(["mount", "--cache-dir", fixture.cacheDirectory, fixture.mountpoint])
        #expect(remount.status == 0, "\(remount.stderr)")
        if let pid = Fixture.daemonPID(in: remount.text) {
            fixture.adopt(daemonPID: pid)
        }
        try fixture.waitUntilListed(.paths(fixture.publishedPaths + ["Show B/2026-11-22 Only.mp3"]))
        #expect(try Self.root(fixture) == ["Show B", Fixture.showTitle], "no SOURCE: the list the last mount used")
    }
}
