import Foundation
import Testing

/// The root's `Latest.m3u` through a real mount: what it lists, that every
/// path in it plays, and that the kernel sees it change after a refresh and
/// after a remount builds its shows from their kept copies.
@Suite(.serialized, .needsRoot)
struct LatestPlaylistMountTests {
    // MARK: - Helpers

    /// One item of a test feed; `age` in seconds before now, `nil` for none.
    private struct Item {
        var title: String
        var file: String
        var age: Int?
    }

    private static let now = Date()

    /// A pubDate `age` seconds before `now`.
    private static func pubDate(_ age: Int) -> String {
        format("EEE, dd MMM yyyy HH:mm:ss 'GMT'", age)
    }

    /// The `YYYY-MM-DD ` a file name starts with.
    private static func day(_ age: Int) -> String {
        format("yyyy-MM-dd", age)
    }

    private static func format(_ pattern: String, _ age: Int) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = pattern
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter.string(from: now.addingTimeInterval(-Double(age)))
    }

    /// Serves `items` (their bytes too) as the feed `path` titled `title`.
    private static func publish(_ fixture: Fixture, _ path: String, _ title: String, _ items: [Item]) throws {
        var body = ""
        for item in items {
            try fixture.origin.put(item.file, Self.bytes(item.file))
            let date = item.age.map { "<pubDate>\(Self.pubDate($0))</pubDate>" } ?? ""
            body += """
                <item><title>\(item.title)</title><guid>\(item.file)</guid>\(date)
                <enclosure url="{{BASE}}/\(item.file)" length="\(Self.bytes(item.file).count)" type="audio/mpeg"/></item>

                """
        }
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(title)</title>
            \(body)</channel></rss>
            """
        try fixture.origin.replace(path, Data(feed.utf8))
    }

    private static func bytes(_ file: String) -> Data {
        Harness.bytes(count: 3000 + file.utf8.count * 101, seed: UInt64(file.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
    }

    /// `#EXTINF` and path lines of `entries` (show, title, file name).
    private static func playlist(_ entries: [(show: String, title: String, name: String)]) -> String {
        "#EXTM3U\n" + entries.map { "#EXTINF:-1,\($0.show) — \($0.title)\n\($0.show)/\($0.name)\n" }.joined()
    }

    // MARK: - Tests

    @Test func theRootListsTheNewestEpisodesOfEveryShowAndEachPathPlays() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let hour = 3600
        let dayLength = 24 * hour
        let alpha = [
            Item(title: "Yesterday", file: "a1.mp3", age: dayLength),
            Item(title: "Long ago", file: "a20.mp3", age: 20 * dayLength),
            Item(title: "Undated", file: "ax.mp3", age: nil),
        ]
        let beta = [
            Item(title: "Fresh", file: "b0.mp3", age: 3 * hour),
            Item(title: "Two days", file: "b2.mp3", age: 2 * dayLength),
            Item(title: "Just over two weeks", file: "b15.mp3", age: 14 * dayLength + hour),
        ]
        try Self.publish(fixture, "feed.xml", "Alpha", alpha)
        try Self.publish(fixture, "beta.xml", "Beta", beta)
        let listed = ["Alpha/\(Self.day(dayLength)) Yesterday.mp3", "Beta/\(Self.day(3 * hour)) Fresh.mp3"]
        try fixture.mount(extra: ["--refresh", "1", "\(fixture.origin.base)/beta.xml"], waitFor: .paths(listed))
        let latest = fixture.mountpoint + "/Latest.m3u"

        #expect(try Harness.sh("ls -1 '\(fixture.mountpoint)'").split(separator: "\n").contains("Latest.m3u"))
        let expected = Self.playlist([
            ("Beta", "Fresh", "\(Self.day(3 * hour)) Fresh.mp3"),
            ("Alpha", "Yesterday", "\(Self.day(dayLength)) Yesterday.mp3"),
            ("Beta", "Two days", "\(Self.day(2 * dayLength)) Two days.mp3"),
        ])
        let text = try Harness.sh("cat '\(latest)'")
        #expect(text == expected)
        let size = try Harness.sh("stat -c %s '\(latest)'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(size == String(expected.utf8.count))
        let mtime = try Harness.sh("stat -c %Y '\(latest)'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(mtime == String(Int(Self.now.timeIntervalSince1970) - 3 * hour), "the newest episode's time")

        // Every path, relative to the root, opens and reads the episode.
        let copy = fixture.directory + "/copy"
        for (line, file) in zip(text.split(separator: "\n").filter { !$0.hasPrefix("#") }, ["b0.mp3", "a1.mp3", "b2.mp3"]) {
            try Harness.sh("cd '\(fixture.mountpoint)' && cat '\(line)' > '\(copy)'")
            #expect(FileManager.default.contents(atPath: copy) == Self.bytes(file), "\(line)")
        }

        // A refresh that adds an episode: the kernel sees the new size at
        // once, though it was told the old one moments before.
        _ = try Harness.sh("stat '\(latest)'")
        try Self.publish(fixture, "feed.xml", "Alpha", [Item(title: "Just now", file: "a0.mp3", age: 60)] + alpha)
        let newer = Self.playlist([("Alpha", "Just now", "\(Self.day(60)) Just now.mp3")])
            + expected.dropFirst("#EXTM3U\n".count)
        var seen = ""
        #expect(Harness.eventually(20) { seen = (try? Harness.sh("cat '\(latest)'")) ?? ""; return seen == newer }, "\(seen)")
        // `stat` too, well within the 30 s the kernel may keep attributes.
        let stat = try Harness.sh("stat -c '%s %Y' '\(latest)'").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(stat == "\(newer.utf8.count) \(Int(Self.now.timeIntervalSince1970) - 60)")
        try fixture.unmount()

        // A remount lists its shows before building them: Latest.m3u comes
        // back whole once they are built, whatever the kernel saw first.
        // What the kernel sees the moment the mount returns is the point.
        try fixture.mount(extra: ["\(fixture.origin.base)/beta.xml"], waitFor: .none)
        _ = try? Harness.sh("stat '\(latest)'")
        #expect(Harness.eventually(20) { seen = (try? Harness.sh("cat '\(latest)'")) ?? ""; return seen == newer }, "\(seen)")
        try fixture.unmount()
    }

    /// A player given `Latest.m3u` the moment `podfs mount` returns reads
    /// every show's newest episodes, with the size `stat` shows after the
    /// open, and a time that is not 1970 before it is opened. A cold mount
    /// lists its shows as their feeds arrive and builds them once arrivals
    /// pause (`ArrivalBuilds`, 0.25 s; 30 s here, so the open comes first
    /// for certain: without building on open it read "#EXTM3U" alone). A
    /// remount lists them with what they added last time.
    @Test func aPlaylistOpenedTheMomentTheMountReturnsListsEveryShow() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let hour = 3600
        try Self.publish(fixture, "feed.xml", "Alpha", [Item(title: "New", file: "a1.mp3", age: hour)])
        try Self.publish(fixture, "beta.xml", "Beta", [Item(title: "Newer", file: "b1.mp3", age: 60)])
        let expected = Self.playlist([
            ("Beta", "Newer", "\(Self.day(60)) Newer.mp3"), ("Alpha", "New", "\(Self.day(hour)) New.mp3"),
        ])
        let latest = fixture.mountpoint + "/Latest.m3u"
        for mount in ["cold", "warm"] {
            try fixture.mount(
                extra: ["\(fixture.origin.base)/beta.xml"], launcher: ["env", "PODFS_TEST_ARRIVAL_PAUSE=30"],
                waitFor: .none)
            // What the kernel is told first (stat), then what a player reads.
            let before = try Harness.sh("stat -c %Y '\(latest)'").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect((Int(before) ?? 0) > 0, "\(mount): Latest.m3u's time before any show is built")
            let text = try Harness.sh("cat '\(latest)'")
            #expect(text == expected, "\(mount)")
            let size = try Harness.sh("stat -c %s '\(latest)'").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(size == String(expected.utf8.count), "\(mount)")
            try fixture.unmount()
        }
    }
}
