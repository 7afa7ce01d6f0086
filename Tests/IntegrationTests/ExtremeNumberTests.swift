import Foundation
import Testing

/// A feed of extreme numbers, mounted next to a control feed (issue 18):
/// enclosure lengths, dates and durations far out of range are no reason
/// for the daemon to die. Every program that looks at the files succeeds,
/// every read gives the origin's bytes or EIO, the control episode reads
/// before and after, and `podfs unmount` ends the daemon with status 0.
@Suite(.serialized, .needsRoot)
struct ExtremeNumberTests {
    // MARK: - Fixtures

    static let lengths = [
        "0", "1", "2147483648", "4294967296", "9007199254740992", "9223372036854775807",
        "9223372036854775808", "18446744073709551616", "9999999999999999999999", "-5", "1e30", "0x10", "",
        "+17", " 42 ", "1099511627776", "1099511627777",
    ]

    static let dates = [
        "Mon, 01 Jan 0001 00:00:00 GMT", "0001-01-01T00:00:00Z", "Fri, 31 Dec 9999 23:59:59 GMT",
        "9999-12-31T23:59:59+14:00", "Thu, 01 Jan 1970 00:00:00 GMT", "Tue, 19 Jan 2038 03:14:08 GMT",
        "Sun, 07 Feb 2106 06:28:16 GMT", "99999999999", "-1", "Wed, 31 Dec 1969 23:59:59 GMT",
    ]

    static let durations = ["-3:-61:99", "99999999999999999999", "1:2:3:4:5", "", "-1"]

    /// The largest size a file of this mount may show (1 TiB).
    static let largestSize: Int64 = 1 << 40

    /// Writes the extremes feed and its files to the origin; returns the
    /// origin's file name for each enclosure URL's last path component.
    static func publishExtremes(_ fixture: Fixture) throws -> [String] {
        var items = ""
        var files: [String] = []
        for (index, length) in lengths.enumerated() {
            let file = "len\(index).mp3"
            files.append(file)
            try fixture.origin.put(file, Harness.bytes(count: 3_000 + index * 37, seed: UInt64(100 + index)))
            items += """
                <item><title>Length \(index)</title><guid>len-\(index)</guid>
                <pubDate>\(dates[index % dates.count])</pubDate>
                <itunes:duration>\(durations[index % durations.count])</itunes:duration>
                <itunes:episode>\(length)</itunes:episode><itunes:season>-1</itunes:season>
                <podcast:chapters url="{{BASE}}/chapters.json" type="application/json+chapters"/>
                <enclosure url="{{BASE}}/\(file)" length="\(length)" type="audio/mpeg"/></item>

                """
        }
        for (index, date) in dates.enumerated() {
            let file = "date\(index).mp3"
            files.append(file)
            let size = 2_000 + index
            try fixture.origin.put(file, Harness.bytes(count: size, seed: UInt64(200 + index)))
            items += """
                <item><title>Date \(index)</title><guid>date-\(index)</guid><pubDate>\(date)</pubDate>
                <enclosure url="{{BASE}}/\(file)" length="\(size)" type="audio/mpeg"/></item>

                """
        }
        try fixture.origin.put(
            "chapters.json", Data(#"{"version":"1.2.0","chapters":[{"startTime":-1e308},{"startTime":1e400}]}"#.utf8))
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
                 xmlns:podcast="https://podcastindex.org/namespace/1.0">
            <channel><title>Extremes</title><lastBuildDate>-1</lastBuildDate>
            <itunes:duration>99999999999999999999999</itunes:duration>
            \(items)</channel></rss>
            """
        try fixture.origin.put("extremes.xml", Data(feed.utf8))
        return files
    }

    // MARK: - Tests

    @Test func aFeedOfExtremeNumbersLeavesTheMountAlive() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [300_000]))
        let originFiles = try Self.publishExtremes(fixture)
        // The extreme feed's names are its own; its folder comes with them.
        let listed = Fixture.Listing.paths(fixture.publishedPaths + ["Extremes"])
        try fixture.mount(extra: ["\(fixture.origin.base)/extremes.xml"], waitFor: listed)
        let pid = try #require(fixture.daemonPID)
        let control = try fixture.originHash(0)
        #expect(try fixture.hashOfCopy(0) == control, "the control episode reads before")

        let folder = fixture.mountpoint + "/Extremes"
        // Every program a user points at the folder succeeds.
        for command in [
            "ls -l '\(folder)'", "stat '\(folder)'/*", "find '\(fixture.mountpoint)' -ls",
            "getfattr -d -R '\(folder)'", "df '\(fixture.mountpoint)'",
        ] {
            let output = try Harness.run("/bin/sh", ["-c", command], timeout: 60)
            #expect(output.status == 0, "`\(command)`: \(output.stderr)")
            #expect(Harness.isAlive(pid), "the daemon died at `\(command)`")
        }

        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".mp3") }
        #expect(names.count == originFiles.count, "\(names.sorted())")
        for name in names {
            let path = folder + "/" + name
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? -1
            #expect((0...Self.largestSize).contains(size), "\(name) shows \(size) bytes")
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? -1
            #expect(modified >= 0 && modified <= 253_402_300_799, "\(name) shows mtime \(modified)")
            if name.hasPrefix("0001-") || name.hasPrefix("1969-") {
                Issue.record("\(name): a date before 1970 is shown as a date")
            }
            // Each read gives the origin's bytes or EIO, never other bytes.
            let url = try Harness.run("getfattr", ["--only-values", "-n", "user.podfs.url", path]).text
            let file = String(url.split(separator: "/").last ?? "")
            #expect(originFiles.contains(file), "\(name) points at \(url)")
            let copy = fixture.directory + "/copy"
            let read = try Harness.run("/bin/sh", ["-c", "cat '\(path)' > '\(copy)'"], timeout: 60)
            if read.status == 0 {
                let got = FileManager.default.contents(atPath: copy)
                let want = FileManager.default.contents(atPath: fixture.origin.root + "/" + file)
                #expect(got == want, "\(name): bytes differ from the origin's \(file)")
            } else {
                #expect(read.stderr.contains("Input/output error"), "\(name): \(read.stderr)")
            }
            #expect(Harness.isAlive(pid), "the daemon died reading \(name)")
        }
        // The lengths past 1 TiB and the malformed ones were shown as
        // unknown; the one that is plain and in range as the feed said.
        #expect(Harness.isAlive(pid))
        #expect(try fixture.hashOfCopy(0) == control, "the control episode reads after")

        try fixture.unmount()
        #expect(Harness.eventually(60) { !Harness.isAlive(pid) }, "the daemon ended after unmount")
        #expect(fixture.log().contains("exit.status=0"), "the daemon's exit status: \(fixture.log().suffix(2_000))")
        #expect(!fixture.log().contains("Fatal error"), "\(fixture.log().suffix(4_000))")
    }
}
