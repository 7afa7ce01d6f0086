import Foundation
import Testing

/// Episodes whose feed gives no length (docs/DESIGN.md, "Real sizes"):
/// their sizes are asked of the origin in the background, one byte each,
/// through a real mount against the test origin.
@Suite(.serialized, .needsRoot)
struct SizeTests {
    // MARK: - Helpers

    private static let show = "Sizes Show"

    /// A feed of `files` (file name, enclosure's length attribute or
    /// `nil` for none), one a day from 2026-11-01, newest first.
    private static func feed(_ files: [(String, String?)]) -> Data {
        var body = ""
        for (index, (file, length)) in files.enumerated() {
            let day = files.count - index
            body += """
                <item><title>Episode \(day)</title><guid>g\(day)</guid>
                <pubDate>\(String(format: "Sun, %02d Nov 2026 10:00:00 GMT", day))</pubDate>
                <enclosure url="{{BASE}}/\(file)"\(length.map { " length=\"\($0)\"" } ?? "") type="audio/mpeg"/>
                </item>

                """
        }
        return Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>\(show)</title>
            \(body)</channel></rss>
            """.utf8)
    }

    private static func path(_ fixture: Fixture, day: Int) -> String {
        "\(fixture.mountpoint)/\(show)/2026-11-\(String(format: "%02d", day)) Episode \(day).mp3"
    }

    /// `podfs status`'s text.
    private static func status(_ fixture: Fixture) throws -> String {
        let output = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory])
        guard output.status == 0 else { throw HarnessError("podfs status failed: \(output.stderr)") }
        return output.text
    }

    /// The line of `status` that names `file`.
    private static func line(_ status: String, _ file: String) -> String {
        status.split(separator: "\n").first { $0.contains(file) }.map(String.init) ?? ""
    }

    private static func size(_ path: String) throws -> String {
        try Harness.sh("stat -c %s '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: - Tests

    /// Three episodes, two with no length and one with length="0": before
    /// anything opens them, `stat` shows each one's real size, learned from
    /// one request of one byte each; the kernel's 0 is dropped at once, not
    /// after its 30 s; the sizes stay after a remount with the origin gone,
    /// and a read of a whole episode fetches each byte once.
    @Test func episodesWhoseFeedGivesNoLengthShowTheirRealSizeBeforeAnythingOpensThem() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [1_234_567, 2_000_001, 700_003]
        let files = ["a.mp3", "b.mp3", "c.mp3"]
        for (file, size) in zip(files, sizes) {
            try fixture.origin.put(file, Harness.bytes(count: size, seed: UInt64(size)))
        }
        try fixture.origin.put("feed.xml", Self.feed([("a.mp3", nil), ("b.mp3", nil), ("c.mp3", "0")]))
        // The newest episode's answer waits until the kernel has been
        // shown size 0.
        try fixture.origin.configure(#"{"hold_head": {"path": "/a.mp3", "seconds": 120}}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-03 Episode 3.mp3"]))
        let newest = Self.path(fixture, day: 3)
        #expect(
            try Harness.eventually { (try fixture.origin.stats()["held"] as? NSNumber)?.intValue ?? 0 >= 1 },
            "the size is asked without anything opening the file; log: \(fixture.log().suffix(3000))")
        #expect(try Self.size(newest) == "0", "the size before the origin answered")
        let unsized = try Self.status(fixture)
        #expect(unsized.contains("Episodes whose size is not known yet: 3 ("), "\(unsized)")
        #expect(Self.line(unsized, "2026-11-03 Episode 3.mp3").contains(" unknown "), "\(unsized)")
        try fixture.origin.release()
        #expect(
            try Harness.eventually(10) { try Self.size(newest) == "1234567" },
            "stat shows the origin's size long before the kernel's 30 s; log: \(fixture.log().suffix(3000))")
        #expect(try Harness.eventually(10) { try Self.size(Self.path(fixture, day: 2)) == "2000001" })
        #expect(try Harness.eventually(10) { try Self.size(Self.path(fixture, day: 1)) == "700003" })
        // Each check's byte is read and dropped, not cut: its connection
        // serves the next check (the feed's, then at most two at once).
        let connections = (try fixture.origin.stats()["connections"] as? NSNumber)?.intValue ?? -1
        #expect(connections >= 1 && connections <= 2, "connections: \(connections)")
        for file in files {
            #expect(try fixture.origin.requests(file) == 1, "one check of \(file)")
            #expect(try fixture.origin.ranges(file) == ["bytes=0-0"], "its first byte")
            #expect(try Harness.eventually { try fixture.origin.bytesSent(file) == 1 }, "one byte of \(file)")
        }
        #expect(
            Harness.eventually { fixture.log().contains("asked origins for the sizes their feeds leave out") },
            "log: \(fixture.log().suffix(3000))")
        // The index has the sizes once the mount commits (about once a second).
        var sized = ""
        #expect(
            try Harness.eventually {
                sized = try Self.status(fixture)
                return !sized.contains("size is not known yet") && !sized.contains("unknown")
            }, "\(sized)")
        #expect(Self.line(sized, "2026-11-03 Episode 3.mp3").contains(" 1.2 MiB "), "\(sized)")
        // Read whole, the file is the origin's and no byte came twice.
        let copy = fixture.directory + "/b-copy.mp3"
        try Harness.sh("cp '\(Self.path(fixture, day: 2))' '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == Harness.bytes(count: 2_000_001, seed: 2_000_001))
        #expect(try fixture.origin.bytesSent("b.mp3") == 2_000_001 + 1, "each byte once, and the check's, not kept")

        // The origin gone: the sizes are the index's.
        try fixture.unmount()
        fixture.origin.stop()
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-03 Episode 3.mp3"]))
        #expect(try Self.size(newest) == "1234567")
        #expect(try Self.size(Self.path(fixture, day: 1)) == "700003")
        try fixture.unmount()
    }

    /// A host that sends a check's head and holds its byte back: the size
    /// is the head's (the client hands a 2xx head over when it ends, not
    /// with the first body byte), the show's next check does not wait for
    /// the held one, and each check gives up its connection after
    /// `Fetch.sizeCheckStall` (10 s without a byte), not the usual 30 s.
    @Test func aHostThatHoldsACheckByteBackHoldsNeitherTheSizeNorTheConnection() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let sizes = [1_000_003, 1_000_001]  // held2 (the newest), held1
        let files = ["held2.mp3", "held1.mp3"]
        for (file, size) in zip(files, sizes) {
            try fixture.origin.put(file, Harness.bytes(count: size, seed: UInt64(size)))
        }
        try fixture.origin.configure(
            #"{"hold": [{"path": "/held2.mp3", "after_bytes": 0, "seconds": 120}, "#
                + #"{"path": "/held1.mp3", "after_bytes": 0, "seconds": 120}]}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.origin.put("feed.xml", Self.feed(files.map { ($0, nil) }))
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-02 Episode 2.mp3"]))
        #expect(
            try Harness.eventually(10) { try Self.size(Self.path(fixture, day: 2)) == "1000003" },
            "the newest's size is its head's; log: \(fixture.log().suffix(3000))")
        #expect(
            try Harness.eventually(10) { try Self.size(Self.path(fixture, day: 1)) == "1000001" },
            "the next check did not wait for the held one; log: \(fixture.log().suffix(3000))")
        #expect((try fixture.origin.stats()["held"] as? NSNumber)?.intValue == 2, "both bodies are held")
        for file in files { #expect(try fixture.origin.requests(file) == 1, "one check of \(file)") }
        // The origin's ends of the two checks' connections, closed by the
        // mount while the origin still holds their bodies (CLOSE-WAIT).
        let port = fixture.origin.base.split(separator: ":").last.map(String.init) ?? ""
        let closed = { () throws -> Int in
            Int(try Harness.sh("ss -Htn state close-wait '( sport = :\(port) )' | wc -l")
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        #expect(
            try Harness.eventually(20) { try closed() == 2 },
            "each check gave its connection up within its limit: \((try? closed()) ?? -1) closed")
        // Nothing of it stays in the way: read whole, the file is the origin's.
        try fixture.origin.clearFaults()
        let copy = fixture.directory + "/held2-copy.mp3"
        try Harness.sh("cp '\(Self.path(fixture, day: 2))' '\(copy)'")
        #expect(FileManager.default.contents(atPath: copy) == Harness.bytes(count: 1_000_003, seed: 1_000_003))
        try fixture.unmount()
    }

    /// A host that answers no check (404s) has its show's checks stop after
    /// three failures in a row, one at a time, said once; the listing is
    /// whole and the sizes stay 0.
    @Test func aShowWhoseChecksFailRestsAndIsSaidOnce() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let files = (1...8).map { ("gone\($0).mp3", String?.none) }
        try fixture.origin.put("feed.xml", Self.feed(files))
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-08 Episode 8.mp3"]))
        let line = "stopped asking a show's origin for the sizes its feed leaves out"
        #expect(Harness.eventually { fixture.log().contains(line) }, "log: \(fixture.log().suffix(3000))")
        Thread.sleep(forTimeInterval: 2)
        let asked = try files.reduce(0) { $0 + (try fixture.origin.requests($1.0)) }
        #expect(asked == 3, "three failures, one at a time: \(asked)")
        #expect(fixture.log().components(separatedBy: line).count == 2, "said once")
        #expect(!fixture.log().contains("could not fetch episode bytes"), "no error line for a check")
        #expect(try Self.size(Self.path(fixture, day: 8)) == "0")
        let listed = try Harness.sh("ls -1 '\(fixture.mountpoint)/\(Self.show)' | grep -c 'mp3$'")
        #expect(listed.trimmingCharacters(in: .whitespacesAndNewlines) == "8")
        try fixture.unmount()
    }

    /// A host that ignores Range answers a check with the whole episode:
    /// the size is learned from its head and the response cut short, and
    /// the show's checks rest after that one, said once.
    @Test func aHostThatIgnoresRangeHasItsShowsChecksStopAfterOne() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 3_000_000
        let files = (1...6).map { ("whole\($0).mp3", String?.none) }
        for (file, _) in files { try fixture.origin.put(file, Harness.bytes(count: size, seed: 5)) }
        try fixture.origin.configure(#"{"ignore_range": "*"}"#)
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.origin.put("feed.xml", Self.feed(files))
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-06 Episode 6.mp3"]))
        let line = "stopped asking a show's origin for the sizes its feed leaves out"
        #expect(Harness.eventually { fixture.log().contains(line) }, "log: \(fixture.log().suffix(3000))")
        Thread.sleep(forTimeInterval: 2)
        let asked = try files.map { try fixture.origin.requests($0.0) }
        #expect(asked == [1, 0, 0, 0, 0, 0], "one check, of the newest (the feed's first): \(asked)")
        #expect(try Self.size(Self.path(fixture, day: 6)) == "\(size)", "the newest's size, from its head")
        #expect(fixture.log().components(separatedBy: line).count == 2, "said once")
        try fixture.unmount()
    }

    /// A host that stitches ads per request: the size check keeps none of
    /// the variant's bytes, so the first read's response is the first with
    /// bytes and the rules that keep variants apart hold as for an episode
    /// never checked. Read whole, the file is exactly one variant. With an
    /// ETag and a length per response, the check tells one variant's
    /// size; behind one fixed weak ETag (which proves nothing) it tells
    /// none, as the first open's probe would not.
    @Test(arguments: [("per_request", false, true), ("weak_fixed", true, false)])
    func aStitchingHostsEpisodeReadsAsOneVariantAfterItsSizeCheck(etag: String, sameLength: Bool, sized: Bool) throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let data = Harness.bytes(count: 3_000_000, seed: 77)
        let adBytes = 65_536
        try fixture.origin.put("a.mp3", data)
        try fixture.origin.put("feed.xml", Self.feed([("a.mp3", nil)]))
        try fixture.origin.configure(
            "{\"stitch\": {\"/a.mp3\": {\"mode\": \"same_url\", \"etag\": \"\(etag)\", \"ads\": \"midroll\", "
                + "\"ad_bytes\": \(adBytes), \"same_length\": \(sameLength)}}}")
        defer { _ = try? fixture.origin.clearFaults() }
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-01 Episode 1.mp3"]))
        let path = Self.path(fixture, day: 1)
        #expect(try Harness.eventually(10) { try fixture.origin.variants("a.mp3") == 1 }, "the check's response")
        if sized {
            #expect(
                try Harness.eventually(10) { try Self.size(path) != "0" },
                "sized by its check; log: \(fixture.log().suffix(3000))")
        } else {
            #expect(
                Harness.eventually(10) { fixture.log().contains("sends no validator that proves a version") },
                "the sizer says why it stops; log: \(fixture.log().suffix(3000))")
            #expect(try Self.size(path) == "0", "a weak ETag proves nothing: no size")
        }
        #expect(try fixture.origin.variants("a.mp3") == 1, "one response so far, the check's")
        let copy = fixture.directory + "/copy.mp3"
        #expect(try Harness.run("/bin/sh", ["-c", "cat '\(path)' > '\(copy)'"], timeout: 120).status == 0)
        let copied = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
        let issued = try fixture.origin.variants("a.mp3")
        let matches = (1...max(1, issued)).filter {
            TestOrigin.midrollVariant($0, of: data, adBytes: adBytes, sameLength: sameLength) == copied
        }
        #expect(matches.count == 1, "one variant whole: \(copied.count) bytes, \(issued) variants issued")
        #expect(try Self.size(path) == "\(copied.count)", "stat shows the size of the variant read")
        try fixture.unmount()
    }

    /// The episode changes at its host between its size check and its
    /// first open (a re-upload): the open's own probe sees a plain change,
    /// not a host that stitches, and the file reads as the new upload with
    /// its size.
    @Test func anEpisodeReuploadedAfterItsSizeCheckReadsAsTheNewUpload() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.origin.put("a.mp3", Harness.bytes(count: 900_000, seed: 1))
        try fixture.origin.put("feed.xml", Self.feed([("a.mp3", nil)]))
        try fixture.mount(waitFor: .paths(["\(Self.show)/2026-11-01 Episode 1.mp3"]))
        let path = Self.path(fixture, day: 1)
        #expect(try Harness.eventually(10) { try Self.size(path) == "900000" }, "log: \(fixture.log().suffix(3000))")
        let upload = Harness.bytes(count: 1_100_000, seed: 2)
        Thread.sleep(forTimeInterval: 1.1)  // a new Last-Modified second
        try fixture.origin.put("a.mp3", upload)
        let copy = fixture.directory + "/copy.mp3"
        #expect(try Harness.run("/bin/sh", ["-c", "cat '\(path)' > '\(copy)'"], timeout: 60).status == 0)
        #expect(FileManager.default.contents(atPath: copy) == upload, "the new upload, whole")
        #expect(try Self.size(path) == "1100000")
        let variant = try Harness.sh("getfattr --only-values -n user.podfs.variant '\(path)'")
        #expect(!variant.contains("stitched"), "a plain change: \(variant)")
        #expect(!fixture.log().contains("its cached bytes were dropped"), "nothing was cached to drop")
        try fixture.unmount()
    }
}

