import Foundation
import Testing

/// Background refresh, the cover, transcripts, chapters and the playlist,
/// through a real mount against the test origin.
@Suite(.serialized, .needsRoot)
struct RefreshTests {
    // MARK: - Helpers

    private static let show = "Refresh Show"

    /// One item of the test feed.
    private struct Item {
        var guid: String
        var title: String
        var day: Int
        var file: String
        var extras = ""
    }

    /// The feed document for `items` (top of the feed first).
    private static func feed(_ items: [Item]) -> Data {
        var body = ""
        for item in items {
            body += """
                <item><title>\(item.title)</title><guid>\(item.guid)</guid>
                <pubDate>\(String(format: "Sun, %02d Nov 2026 10:00:00 GMT", item.day))</pubDate>
                <enclosure url="{{BASE}}/\(item.file)" length="1000" type="audio/mpeg"/>\(item.extras)
                </item>

                """
        }
        return Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
                 xmlns:podcast="https://podcastindex.org/namespace/1.0">
            <channel><title>\(show)</title><itunes:image href="{{BASE}}/art/cover.png"/>
            \(body)</channel></rss>
            """.utf8)
    }

    /// The show's episodes of 2026-11-01 named `names`, as a mount lists them.
    private static func listed(_ names: [String]) -> Fixture.Listing {
        .paths(names.map { "\(show)/2026-11-01 \($0)" })
    }

    private static func listing(_ fixture: Fixture) throws -> [String] {
        try Harness.sh("ls -1 '\(fixture.mountpoint)/\(show)'").split(separator: "\n").map(String.init).sorted()
    }

    /// Statuses the origin answered for one path.
    private static func statuses(_ fixture: Fixture, _ path: String) throws -> [Int] {
        let paths = try fixture.origin.stats()["paths"] as? [String: Any]
        let entry = paths?[path] as? [String: Any]
        return (entry?["statuses"] as? [NSNumber])?.map(\.intValue) ?? []
    }

    private static func encodings(_ fixture: Fixture, _ path: String) throws -> [String] {
        let paths = try fixture.origin.stats()["paths"] as? [String: Any]
        let entry = paths?[path] as? [String: Any]
        return entry?["encodings"] as? [String] ?? []
    }

    // MARK: - Tests

    @Test func refreshAddsNewEpisodesWithoutRemountAndKeepsEveryOldName() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let mp3 = (1...4).map { Harness.bytes(count: 1000 + $0 * 77, seed: UInt64(40 + $0)) }
        for (index, data) in mp3.enumerated() { try fixture.origin.put("e\(index + 1).mp3", data) }
        let cover = Harness.bytes(count: 70_001, seed: 9)
        let vtt = Data("WEBVTT\n\n00:00.000 --> 00:01.000\nHello from the transcript.\n".utf8)
        let srt = Data("1\n00:00:00,000 --> 00:00:01,000\nHello.\n".utf8)
        let chapters = Data(#"{"version":"1.2.0","chapters":[{"startTime":0,"title":"Intro"}]}"#.utf8)
        try fixture.origin.put("art/cover.png", cover)
        try fixture.origin.put("t/e1.vtt", vtt)
        try fixture.origin.put("t/e1.srt", srt)
        try fixture.origin.put("t/e1.json", chapters)
        let extras = """
            <podcast:transcript url="{{BASE}}/t/e1.vtt" type="text/vtt" language="en"/>
            <podcast:transcript url="{{BASE}}/t/e1.srt" type="application/x-subrip"/>
            <podcast:chapters url="{{BASE}}/t/e1.json" type="application/json+chapters"/>
            """
        // Two episodes with the same name: the older one gets the plain name.
        let first = [
            Item(guid: "g2", title: "Same", day: 1, file: "e2.mp3"),
            Item(guid: "g1", title: "Same", day: 1, file: "e1.mp3", extras: extras),
            Item(guid: "g0", title: "Start", day: 1, file: "e4.mp3"),
        ]
        try fixture.origin.put("feed.xml", Self.feed(first))
        try fixture.origin.configure(#"{"gzip": true}"#)
        try fixture.mount(extra: ["--refresh", "1"], waitFor: Self.listed(["Same.mp3", "Same (2).mp3", "Start.mp3"]))
        let show = "\(fixture.mountpoint)/\(Self.show)"

        // The folder: episodes, the cover, transcripts, chapters, playlist.
        let expected = [
            "2026-11-01 Same (2).mp3", "2026-11-01 Same.chapters.json", "2026-11-01 Same.vtt",
            "2026-11-01 Same.mp3", "2026-11-01 Same.srt", "2026-11-01 Start.mp3", "Refresh Show.m3u", "cover.png",
        ]
        #expect(try Self.listing(fixture) == expected.sorted())
        _ = try Harness.sh("ls -l '\(show)'")
        #expect(try fixture.origin.requests("t/e1.vtt") == 0, "ls -l must not fetch transcripts")

        // Bytes equal the origin's, with cat and with cp.
        let copy = fixture.directory + "/copy"
        try Harness.sh("cp '\(show)/cover.png' '\(copy).png'")
        #expect(FileManager.default.contents(atPath: copy + ".png") == cover)
        try Harness.sh("cat '\(show)/2026-11-01 Same.vtt' > '\(copy).vtt'")
        #expect(FileManager.default.contents(atPath: copy + ".vtt") == vtt)
        try Harness.sh("cp '\(show)/2026-11-01 Same.srt' '\(copy).srt'")
        #expect(FileManager.default.contents(atPath: copy + ".srt") == srt)
        try Harness.sh("cat '\(show)/2026-11-01 Same.chapters.json' > '\(copy).json'")
        #expect(FileManager.default.contents(atPath: copy + ".json") == chapters)
        let size = try Harness.sh("stat -c %s '\(show)/cover.png'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(size == "70001", "after the first read, stat shows the real size")

        // The playlist: oldest first, relative paths, titles.
        let m3u = try Harness.sh("cat '\(show)/Refresh Show.m3u'")
        #expect(
            m3u == """
                #EXTM3U
                #EXTINF:-1,Start
                2026-11-01 Start.mp3
                #EXTINF:-1,Same
                2026-11-01 Same.mp3
                #EXTINF:-1,Same
                2026-11-01 Same (2).mp3

                """)

        // Refreshes are conditional (304) and ask for gzip.
        #expect(try Harness.eventually { try Self.statuses(fixture, "/feed.xml").contains(304) })
        #expect(try Self.encodings(fixture, "/feed.xml").contains("gzip"))

        // Keep one episode open that the next feed drops (its name is now
        // in the kernel's cache for 30 s).
        _ = try Harness.sh("stat '\(show)/2026-11-01 Start.mp3'")
        // O_CLOEXEC: a program another test starts meanwhile must not
        // inherit it (it would keep the mount busy).
        let descriptor = open("\(show)/2026-11-01 Start.mp3", O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        let held = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
        var heldOpen = true
        defer { if heldOpen { close(descriptor) } }

        // A new episode with the same name at the top; "Start" leaves the feed.
        let second = [Item(guid: "g3", title: "Same", day: 1, file: "e3.mp3")] + first.dropLast()
        try fixture.origin.replace("feed.xml", Self.feed(second))
        #expect(
            try Harness.eventually { try Self.listing(fixture).contains("2026-11-01 Same (3).mp3") },
            "the new episode appears without a remount; log: \(fixture.log())")
        let after = try Self.listing(fixture)
        #expect(after.contains("2026-11-01 Same.mp3") && after.contains("2026-11-01 Same (2).mp3"))
        #expect(after.contains("2026-11-01 Same.vtt"), "old names unchanged")
        #expect(!after.contains("2026-11-01 Start.mp3"), "a removed episode leaves the listing")
        // The kernel was told to forget the name (it would keep it 30 s).
        #expect(
            Harness.eventually(5) { (try? Harness.sh("stat '\(show)/2026-11-01 Start.mp3'")) == nil },
            "a removed name is gone from the kernel's cache too")
        let newCopy = fixture.directory + "/new.mp3"
        try Harness.sh("cat '\(show)/2026-11-01 Same (3).mp3' > '\(newCopy)'")
        #expect(FileManager.default.contents(atPath: newCopy) == mp3[2])
        #expect(try held.readToEnd() == mp3[3], "an open file of a removed episode stays readable")
        let newM3U = try Harness.sh("cat '\(show)/Refresh Show.m3u'")
        #expect(
            newM3U == """
                #EXTM3U
                #EXTINF:-1,Same
                2026-11-01 Same.mp3
                #EXTINF:-1,Same
                2026-11-01 Same (2).mp3
                #EXTINF:-1,Same
                2026-11-01 Same (3).mp3

                """)
        let status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        #expect(status.text.contains("last refresh: ok"), "\(status.text)")
        close(descriptor)
        heldOpen = false
        try fixture.unmount()
    }

    /// A feed that moves an episode to another file (a new host or path
    /// for the same guid, as when a show changes hosts) and dates it
    /// anew: the file reads the new file from then on, without a remount,
    /// with nothing of the old one, whose URL is gone, and shows the new
    /// date as its time.
    @Test func anEpisodeWhoseEnclosureMovesReadsTheNewFileWithoutARemount() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        // One episode small enough to be cached whole by its first read,
        // one of which only the head is cached, one open during the move.
        let old = [61, 63, 65].map { Harness.bytes(count: $0 == 63 ? 3_000_000 : 300_000, seed: UInt64($0)) }
        let new = [62, 64, 66].map { Harness.bytes(count: $0 == 64 ? 2_500_000 : 400_000, seed: UInt64($0)) }
        for number in 0..<3 {
            try fixture.origin.put("e\(number).mp3", old[number])
            try fixture.origin.put("moved/e\(number).mp3", new[number])
        }
        let titles = ["One", "Two", "Three"]
        try fixture.origin.put(
            "feed.xml", Self.feed((0..<3).map { Item(guid: "g\($0)", title: titles[$0], day: 1, file: "e\($0).mp3") }))
        try fixture.mount(extra: ["--refresh", "1"], waitFor: Self.listed(["One.mp3", "Two.mp3", "Three.mp3"]))
        let paths = titles.map { "\(fixture.mountpoint)/\(Self.show)/2026-11-01 \($0).mp3" }
        // Each old file's head is cached, and the mount has checked it.
        for path in paths {
            _ = try Harness.sh("dd if='\(path)' of=/dev/null bs=100000 count=1 2>/dev/null")
        }
        let oldRequests = try (0..<3).map { try fixture.origin.requests("e\($0).mp3") }
        #expect(try fixture.origin.bytesSent("e1.mp3") < 3_000_000, "only the head of the long one is cached")
        // O_CLOEXEC: a program another test starts meanwhile must not inherit it.
        let descriptor = open(paths[2], O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        var heldOpen = true
        defer { if heldOpen { close(descriptor) } }

        try fixture.origin.configure(#"{"status": {"/e1.mp3": {"code": 404}}}"#)
        try fixture.origin.replace(
            "feed.xml",
            Self.feed((0..<3).map { Item(guid: "g\($0)", title: titles[$0], day: 2, file: "moved/e\($0).mp3") }))
        let newTime = "1793613600"  // Mon, 02 Nov 2026 10:00:00 GMT
        let mtime = { (path: String) in
            try Harness.sh("stat -c %Y '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for path in paths.prefix(2) {
            #expect(
                try Harness.eventually { try mtime(path) == newTime },
                "the file takes its new date without a remount; log: \(fixture.log())")
        }
        // The open one reads on in the file it opened, and moves once closed.
        #expect(try mtime(paths[2]) != newTime, "not moved while it is read")
        let held = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
        #expect(try held.readToEnd() == old[2], "an open file reads on in the file it opened")
        close(descriptor)
        heldOpen = false
        #expect(try Harness.eventually { try mtime(paths[2]) == newTime }, "moved at a refresh once closed")
        for (number, path) in paths.enumerated() {
            let copy = fixture.directory + "/copy\(number).mp3"
            _ = try? Harness.sh("cp '\(path)' '\(copy)'")
            #expect(
                FileManager.default.contents(atPath: copy) == new[number],
                "\(titles[number]): the new file, none of the old; log: \(fixture.log())")
            #expect(try fixture.origin.requests("e\(number).mp3") == oldRequests[number], "the old URL is not asked again")
            #expect(try fixture.origin.bytesSent("moved/e\(number).mp3") <= Int64(Double(new[number].count) * 1.02))
        }
        #expect(fixture.log().contains("enclosure moved to another file"))
        #expect(try Self.listing(fixture).contains("2026-11-01 One.mp3"), "the file keeps its name")
        try fixture.unmount()
    }

    /// A signed or tracking link whose query changes at a refresh: the
    /// episode keeps its cached bytes, and what it still needs is asked at
    /// the new link, not the pinned old one (which may have expired).
    @Test func aNewQueryAloneKeepsTheBytesAndIsAskedFromThenOn() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let data = Harness.bytes(count: 3_000_000, seed: 71)
        try fixture.origin.put("e1.mp3", data)
        try fixture.origin.put("feed.xml", Self.feed([Item(guid: "g1", title: "One", day: 1, file: "e1.mp3?token=a")]))
        try fixture.mount(extra: ["--refresh", "1"], waitFor: Self.listed(["One.mp3"]))
        let path = "\(fixture.mountpoint)/\(Self.show)/2026-11-01 One.mp3"
        _ = try Harness.sh("dd if='\(path)' of=/dev/null bs=100000 count=1 2>/dev/null")
        let before = try fixture.origin.bytesSent("e1.mp3")
        #expect(before > 0 && before < Int64(data.count), "the head only")
        try fixture.origin.replace("feed.xml", Self.feed([Item(guid: "g1", title: "One", day: 1, file: "e1.mp3?token=b")]))
        #expect(
            Harness.eventually { fixture.log().contains("feed refreshed") },
            "the new link landed; log: \(fixture.log())")
        let queries = { () throws -> [String] in
            let paths = try fixture.origin.stats()["paths"] as? [String: Any]
            return ((paths?["/e1.mp3"] as? [String: Any])?["queries"] as? [String]) ?? []
        }
        let asked = try queries().count
        let copy = fixture.directory + "/copy.mp3"
        try Harness.sh("cp '\(path)' '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == data)
        let later = try queries().dropFirst(asked)
        #expect(!later.isEmpty && later.allSatisfy { $0 == "token=b" }, "asked at the new link: \(later)")
        #expect(try fixture.origin.bytesSent("e1.mp3") <= Int64(Double(data.count) * 1.02), "the cached head kept")
        try fixture.unmount()
    }

    /// Every show's cover is kept (docs/DESIGN.md, "Offline by policy"):
    /// fetched once in the background, so `stat` shows its real size
    /// before anything opens it (the kernel is told to drop the size it
    /// was shown, 0, which it would keep 30 s), and it reads with the
    /// origin gone. The episodes are not fetched (`keep_latest` is 0).
    @Test func aShowsCoverIsKeptWithItsRealSizeBeforeAnythingOpensIt() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let cover = Harness.bytes(count: 70_001, seed: 9)
        try fixture.origin.put("art/cover.png", cover)
        try fixture.origin.put("e1.mp3", Harness.bytes(count: 1000, seed: 1))
        try fixture.origin.put("feed.xml", Self.feed([Item(guid: "g1", title: "One", day: 1, file: "e1.mp3")]))
        // The cover's answer waits until the kernel has been shown size 0.
        try fixture.origin.configure(#"{"hold_head": {"path": "/art/cover.png", "seconds": 120}}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.mount(waitFor: Self.listed(["One.mp3"]))
        let path = "\(fixture.mountpoint)/\(Self.show)/cover.png"
        let size = { try Harness.sh("stat -c %s '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(
            try Harness.eventually { (try fixture.origin.stats()["held"] as? NSNumber)?.intValue ?? 0 >= 1 },
            "the keeper asks for the cover without anything opening it; log: \(fixture.log().suffix(3000))")
        #expect(try size() == "0", "the size before the origin answered")
        try fixture.origin.release()
        #expect(
            try Harness.eventually(10) { try size() == "70001" },
            "stat shows the real size without an open, long before the kernel's 30 s; log: \(fixture.log().suffix(3000))")
        #expect(try Harness.eventually { try fixture.origin.bytesSent("art/cover.png") == 70_001 })
        #expect(try fixture.origin.requests("art/cover.png") == 1, "one request for the whole cover")
        #expect(try fixture.origin.requests("e1.mp3") == 0, "no episode is fetched")
        // The status says so (the report is written within a second).
        #expect(
            try Harness.eventually(10) {
                try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text
                    .contains("Covers kept offline: 1 of 1 complete")
            }, "\((try? Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text) ?? "")")

        // The origin gone: the cover is there, byte for byte.
        try fixture.unmount()
        fixture.origin.stop()
        try fixture.mount(waitFor: Self.listed(["One.mp3"]))
        #expect(try size() == "70001")
        let copy = fixture.directory + "/cover-offline.png"
        try Harness.sh("cp '\(path)' '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == cover)
        try fixture.unmount()
    }

    /// A cover the host no longer has (a 404, as feeds often name) leaves
    /// the show as it was, says why once at notice level and is asked for
    /// again in an hour, not in a minute.
    @Test func aCoverTheHostNoLongerHasIsSaidOnceAndNotAskedForAgainAtOnce() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.origin.put("e1.mp3", Harness.bytes(count: 1000, seed: 1))
        try fixture.origin.put("feed.xml", Self.feed([Item(guid: "g1", title: "One", day: 1, file: "e1.mp3")]))
        try fixture.mount(waitFor: Self.listed(["One.mp3"]))
        let line = "could not keep a show's file offline; trying again in an hour"
        #expect(
            Harness.eventually { fixture.log().contains(line) }, "log: \(fixture.log().suffix(3000))")
        let asked = try fixture.origin.requests("art/cover.png")
        #expect(asked >= 1, "the origin saw the cover asked for")
        Thread.sleep(forTimeInterval: 3)
        #expect(try fixture.origin.requests("art/cover.png") == asked, "not asked again within the hour")
        #expect(fixture.log().components(separatedBy: line).count == 2, "said once")
        #expect(!fixture.log().contains("could not fetch episode bytes"), "no error line for a cover")
        let listing = try Self.listing(fixture)
        #expect(listing.contains("cover.png") && listing.contains("2026-11-01 One.mp3"))
        try fixture.unmount()
    }

    /// A feed whose image names something larger than any artwork (a
    /// video, by mistake or not) has it read only when opened: the keeper
    /// stops at the probe, once the origin's size is known.
    @Test func aCoverLargerThanAnyArtworkIsNotKept() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 17 * 1024 * 1024
        try fixture.origin.put("art/cover.png", Harness.bytes(count: size, seed: 3))
        try fixture.origin.put("e1.mp3", Harness.bytes(count: 1000, seed: 1))
        try fixture.origin.put("feed.xml", Self.feed([Item(guid: "g1", title: "One", day: 1, file: "e1.mp3")]))
        try fixture.mount(waitFor: Self.listed(["One.mp3"]))
        #expect(
            Harness.eventually { fixture.log().contains("a show's cover is larger than any artwork and is not kept offline") },
            "log: \(fixture.log().suffix(3000))")
        Thread.sleep(forTimeInterval: 1)
        let sent = try fixture.origin.bytesSent("art/cover.png")
        #expect(sent >= 1 && sent <= 1024 * 1024, "the probe's bytes, not the file's: \(sent)")
        #expect(try fixture.origin.requests("art/cover.png") == 1)
        // Opened, it reads whole with its real size, as any file.
        let path = "\(fixture.mountpoint)/\(Self.show)/cover.png"
        #expect(try Harness.sh("wc -c < '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines) == "\(size)")
        try fixture.unmount()
    }

    /// Scanners skip folders whose time stayed (MPD, Navidrome): a folder's
    /// time moves whenever its listing changes, a back-filled episode (an
    /// old date) and a removed one included, in a refresh and across a
    /// remount, and stays when nothing changed.
    @Test func aFoldersTimeMovesWhenItsListingChanges() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        for index in 1...3 { try fixture.origin.put("e\(index).mp3", Harness.bytes(count: 1000, seed: UInt64(index))) }
        let two = [Item(guid: "g2", title: "Two", day: 12, file: "e2.mp3"), Item(guid: "g1", title: "One", day: 11, file: "e1.mp3")]
        try fixture.origin.put("feed.xml", Self.feed(two))
        // "Two" is in every version of the feed below.
        let listed = Fixture.Listing.paths(["\(Self.show)/2026-11-12 Two.mp3", "\(Self.show)/2026-11-11 One.mp3"])
        try fixture.mount(extra: ["--refresh", "1"], waitFor: listed)
        let folder = "\(fixture.mountpoint)/\(Self.show)"
        let time = { () throws -> Int in
            Int(try Harness.sh("stat -c %Y '\(folder)'").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let rootTime = { () throws -> Int in
            Int(try Harness.sh("stat -c %Y '\(fixture.mountpoint)'").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let first = try time()
        #expect(first == 1_794_477_600, "the newest episode's date (2026-11-12 10:00 UTC)")
        // An episode back-filled with an older date than every other.
        try fixture.origin.replace(
            "feed.xml", Self.feed(two + [Item(guid: "g0", title: "Zero", day: 1, file: "e3.mp3")]))
        #expect(try Harness.eventually { try Self.listing(fixture).contains("2026-11-01 Zero.mp3") })
        var backFilled = first
        #expect(Harness.eventually(5) { backFilled = (try? time()) ?? first; return backFilled > first }, "\(backFilled)")
        #expect(try rootTime() >= backFilled, "the root's time is its newest show's")
        // Unchanged across a remount.
        try fixture.unmount()
        try fixture.mount(waitFor: listed)
        #expect(try time() == backFilled, "nothing changed: the same time")
        try fixture.unmount()
        // Removed while unmounted: the next mount's folder time moves.
        try fixture.origin.replace("feed.xml", Self.feed(Array(two.prefix(1)) + [Item(guid: "g0", title: "Zero", day: 1, file: "e3.mp3")]))
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-12 Two.mp3"]))
        var removed = backFilled
        #expect(
            Harness.eventually(10) {
                removed = (try? time()) ?? backFilled
                return removed > backFilled && (try? Self.listing(fixture).contains("2026-11-11 One.mp3")) == false
            }, "\(removed)")
        print("folder times: \(first), back-filled \(backFilled), removed \(removed)")
        try fixture.unmount()
    }

    @Test func aBrokenFeedOnRefreshKeepsTheListingAndStatusSaysWhy() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [5000, 6000]))
        // A second SOURCE that never loads: the mount goes on without it.
        try fixture.mount(extra: ["-o", "refresh=1s", "\(fixture.origin.base)/missing.xml"])
        let show = "\(fixture.mountpoint)/\(Fixture.showTitle)"
        let before = try Harness.sh("ls -1 '\(show)'")
        try fixture.origin.replace("feed.xml", Data("this is not a feed at all\n".utf8))
        var status = ""
        #expect(
            try Harness.eventually {
                status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text
                return status.contains("last refresh: failed: the feed does not parse")
            }, "\(status)")
        #expect(try Harness.sh("ls -1 '\(show)'") == before, "the previous listing stays")
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(1))' > '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == fixture.episodes[1].data)
        #expect(fixture.log().contains("feed refresh failed; keeping the previous listing"))
        let json = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory, "--json"])
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        let feed = (object?["feeds"] as? [[String: Any]])?.first
        let refresh = feed?["lastRefresh"] as? [String: Any]
        #expect(refresh?["ok"] as? Bool == false)
        #expect((refresh?["detail"] as? String)?.contains("does not parse") == true)

        #expect(status.contains("/missing.xml"), "a feed that never loaded is in the status too: \(status)")
        #expect(status.contains("HTTP 404"), "\(status)")

        // Once it loads, it gets its folder without a remount.
        try fixture.origin.put("missing.xml", Self.feed([Item(guid: "late", title: "Late", day: 3, file: "ep1.mp3")]))
        #expect(
            Harness.eventually { (try? Harness.sh("ls '\(fixture.mountpoint)'"))?.contains(Self.show) == true },
            "a SOURCE that failed at mount time appears at its first good refresh")
        #expect(try Harness.sh("ls -1 '\(fixture.mountpoint)/\(Self.show)'").contains("2026-11-03 Late.mp3"))

        // The broken copy was not kept: offline, a remount shows the last good one.
        try fixture.unmount()
        fixture.origin.stop()
        try fixture.mount()
        #expect(try Harness.sh("ls -1 '\(show)'") == before)
        try fixture.unmount()

        // Fixed again: the next refresh says so.
        try fixture.origin.start()
        try fixture.publish(fixture.episodes)
        try fixture.mount(extra: ["--refresh", "1"])
        #expect(
            try Harness.eventually {
                status = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory]).text
                return status.contains("last refresh: ok")
            }, "\(status)")
        try fixture.unmount()
    }
}
