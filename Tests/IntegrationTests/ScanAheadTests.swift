import Foundation
import Testing

/// A library scan goes at the link's pace: once two files next to each
/// other in a folder's listing were read at their head and tail and closed,
/// the next files' heads and tails are fetched ahead, before the scanner
/// opens them (docs/DESIGN.md, "Who reads"). A program that opens one file,
/// or files out of order, fetches nothing ahead.
@Suite(.serialized, .needsRoot)
struct ScanAheadTests {
    private static let mib = 1024 * 1024

    /// A scanner as MPD is one: every file of the folder in `readdir`
    /// order (or the `files` given), opened, its head read up to `head`
    /// bytes and its last 128 bytes, closed. Prints each file's name, when
    /// it opened it (`time.monotonic()`, the clock the origin stamps its
    /// answers with) and the ranges the origin had been asked for that file
    /// just before (its `/_origin/stats`).
    private static let scanner = """
        import json, os, sys, time, urllib.request
        folder, head, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        names = sys.argv[4:] or [n for n in os.listdir(folder) if n.endswith(".mp3")]
        for name in names:
            path = os.path.join(folder, name)
            stats = json.load(urllib.request.urlopen(base + "/_origin/stats"))["paths"]
            asked = stats.get("/ep" + name.rsplit(" ", 1)[1], {}).get("ranges", [])
            opened = time.monotonic()
            with open(path, "rb") as f:
                done = 0
                while done < head:
                    chunk = f.read(min(65536, head - done))
                    if not chunk:
                        break
                    done += len(chunk)
                f.seek(-128, os.SEEK_END)
                f.read(128)
            print(json.dumps({"name": name, "opened": opened, "asked": asked}), flush=True)
        """

    private struct Open {
        var name: String
        var opened: Double
        /// Ranges the origin was asked for before the scanner opened it.
        var asked: [String]
    }

    private static func scan(_ fixture: Fixture, head: Int, files: [String] = []) throws -> [Open] {
        let folder = fixture.mountpoint + "/" + Fixture.showTitle
        let output = try Harness.run(
            "python3", ["-c", scanner, folder, String(head), fixture.origin.base] + files, timeout: 120)
        #expect(output.status == 0, "the scanner: \(output.stderr)")
        return output.text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let name = object["name"] as? String, let opened = object["opened"] as? Double
            else { return nil }
            return Open(name: name, opened: opened, asked: object["asked"] as? [String] ?? [])
        }
    }

    /// The origin's file behind a mount's file name ("2026-11-03 Episode 3.mp3").
    private static func originFile(_ name: String) -> String? {
        guard let number = name.split(separator: " ").last?.split(separator: ".").first else { return nil }
        return "ep\(number).mp3"
    }

    @Test func aScanFetchesTheNextFilesHeadsAndTailsBeforeItOpensThem() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let count = 10
        try fixture.publish(Fixture.episodes(sizes: (0..<count).map { 6 * Self.mib + $0 * 1000 }))
        try fixture.mount(extra: ["-o", "log_level=debug"])
        try fixture.origin.reset()
        // 30 ms a request, as a far origin: a file's fetch ahead (its
        // probe, then its head and tail) is a round trip ahead of the
        // scanner, not a race with it on loopback.
        try fixture.origin.configure(#"{"latency_ms": 30}"#)
        let opens = try Self.scan(fixture, head: 300 * 1024)
        try fixture.origin.clearFaults()
        #expect(opens.count == count, "the scanner read every file: \(opens.map(\.name))")
        // Fetches ahead end with their files: wait until every request the
        // origin took has finished.
        let settled = Harness.eventually(30) {
            (1...count).allSatisfy { n in
                ((try? fixture.origin.finished("ep\(n).mp3").count) ?? -1) == ((try? fixture.origin.requests("ep\(n).mp3")) ?? -2)
            }
        }
        #expect(settled, "the origin's requests settle")
        var fetchedAhead: [String] = []
        var tailsAhead: [String] = []
        for (place, open) in opens.enumerated() {
            let file = try #require(Self.originFile(open.name))
            if !open.asked.isEmpty { fetchedAhead.append(open.name) }
            // Its tail (past 5 MiB of a 6 MiB file) was asked for before.
            let starts = open.asked.map { Int64($0.dropFirst("bytes=".count).prefix { $0.isNumber }) ?? 0 }
            if starts.contains(where: { $0 > 5 * Int64(Self.mib) }) { tailsAhead.append(open.name) }
            // No byte twice, and the head and tail only.
            let sent = try fixture.origin.bytesSent(file)
            #expect(sent <= Int64(Self.mib + 8192), "\(open.name) cost \(sent) bytes")
            if place < 2 { #expect(open.asked.isEmpty, "the first two files are what shows a scan") }
        }
        // Every file from the fourth on was asked for before the scanner
        // opened it, its tail too (the third goes out as the second closes,
        // a race with the scanner's open of it).
        let fromTheFourth = Set(opens.dropFirst(3).map(\.name))
        #expect(fromTheFourth.isSubset(of: Set(fetchedAhead)), "fetched ahead: \(fetchedAhead)")
        #expect(fromTheFourth.isSubset(of: Set(tailsAhead)), "tails fetched ahead: \(tailsAhead)")
        #expect(fixture.log().contains("fetching ahead of a scan"))
        try fixture.unmount()

        // The remount's scan fetches nothing but the checks, though it
        // reads further at each head, as MPD does when the bytes come fast
        // (its decoder's read-ahead): a file fetched ahead holds what the
        // scan's own read would have fetched, not only what it read.
        try fixture.mount()
        try fixture.origin.reset()
        _ = try Self.scan(fixture, head: 700 * 1024)
        let bytes = try (1...count).reduce(Int64(0)) { $0 + (try fixture.origin.bytesSent("ep\($1).mp3")) }
        #expect(bytes <= Int64(count), "after a remount: \(bytes) bytes (one a file for the checks)")
        try fixture.unmount()
    }

    @Test func oneFileOrFilesOutOfOrderFetchNothingAhead() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let count = 8
        try fixture.publish(Fixture.episodes(sizes: Array(repeating: 4 * Self.mib, count: count)))
        try fixture.mount(extra: ["-o", "log_level=debug"])
        try fixture.origin.reset()
        let names = (0..<count).map { (fixture.path($0) as NSString).lastPathComponent }
        // One file, then files that are not next to each other.
        _ = try Self.scan(fixture, head: 300 * 1024, files: [names[2]])
        _ = try Self.scan(fixture, head: 300 * 1024, files: [names[5], names[0], names[7]])
        // The kernel tells podfs of a close after `close` returned. Once
        // the scan-ahead logged its decision on each of the four closes,
        // it had its chance: a fetch ahead, decided at an open or a close,
        // is queued and logged before that close's line.
        func decisions() -> [Substring] {
            fixture.log().split(separator: "\n").filter { $0.contains("scan-ahead noted a closed file") }
        }
        #expect(Harness.eventually(30) { decisions().count >= 4 }, "the four closes reached the scan-ahead")
        #expect(decisions().count == 4 && decisions().allSatisfy { $0.contains("files.ahead=0") }, "\(decisions())")
        #expect(!fixture.log().contains("a folder is being scanned"), "no fetch ahead was queued")
        let asked = try (1...count).filter { try fixture.origin.requests("ep\($0).mp3") > 0 }
        #expect(asked == [1, 3, 6, 8], "files the origin was asked for: \(asked)")
        try fixture.unmount()
    }
}
