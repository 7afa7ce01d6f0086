import Foundation
import Testing

/// Each kind of host that stitches ads per request (docs/DESIGN.md,
/// "Episodes and their variants"), read as a player does and then whole:
/// which ones podfs marks unstable (kept in the index), what a player
/// sees, which variants a full read returns and what it cost the origin.
/// A full read that succeeds is exactly one variant, never a mix.
@Suite(.serialized, .needsRoot)
struct StitchedScenarioTests {
    private static let mib = 1024 * 1024
    private static let adBytes = 65_536
    private static let size = 6 * mib + 4321

    /// What one scenario showed.
    struct Outcome {
        var playerErrors: Int
        var fullReadFailed: Bool
        var variantsInFullRead: [Int]
        var originBytesPerSize: Double
        var unstable: String?
    }

    /// Mounts, reads like a player (the head, a seek to the middle, play
    /// on, back near the start), then the whole file; with `passes` 2 it
    /// reads like a player only, unmounts and does it all on the partial
    /// cache and the marks it kept. Returns what the last pass showed
    /// (each pass is printed).
    private func run(
        _ name: String, stitch: String?, extra: String = "", sameLength: Bool = false, passes: Int = 1
    ) throws -> Outcome {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.size]))
        var config: [String] = []
        if let stitch { config.append("\"stitch\": {\"/ep1.mp3\": {\"ad_bytes\": \(Self.adBytes)\(stitch)}}") }
        if !extra.isEmpty { config.append(extra) }
        try fixture.origin.configure("{" + config.joined(separator: ", ") + "}")
        var outcome: Outcome?
        for pass in 1...passes {
            let issuedBefore = try fixture.origin.variants("ep1.mp3")
            try fixture.origin.reset()
            // Debug logging, so a failed read can be told from the log.
            try fixture.mount(extra: ["--log-level", "debug"])
            let path = fixture.path(0)
            var errors = 0
            for (skip, count) in [(0, 4), (48, 8), (56, 8), (5, 2)] {
                let output = try Harness.run(
                    "dd", ["if=\(path)", "of=/dev/null", "bs=64k", "skip=\(skip)", "count=\(count)", "iflag=direct"])
                if output.status != 0 {
                    errors += 1
                    print("scenario \(name), mount \(pass): the read at block \(skip) failed: \(output.stderr)")
                }
            }
            let copy = fixture.directory + "/copy"
            let command = pass < passes ? "true" : "cat '\(path)' > '\(copy)'"
            let full = try Harness.run("/bin/sh", ["-c", command], timeout: 300)
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
            let issued = try fixture.origin.variants("ep1.mp3")
            let data = fixture.episodes[0].data
            let found = full.status != 0 ? [] : (issued == 0 ? (bytes == data ? [0] : []) : (1...issued).filter {
                TestOrigin.variant($0, of: data, adBytes: Self.adBytes, sameLength: sameLength) == bytes
            })
            let sent = try fixture.origin.variantBytesSent("ep1.mp3")
            try fixture.unmount()
            if errors > 0 || full.status != 0 {
                print("the daemon's log:\n" + fixture.log().split(separator: "\n").suffix(400).joined(separator: "\n"))
            }
            let result = Outcome(
                playerErrors: errors, fullReadFailed: full.status != 0, variantsInFullRead: found,
                originBytesPerSize: Double(sent) / Double(Self.size), unstable: try unstableMark(fixture))
            print(
                "scenario \(name), mount \(pass): player errors \(errors) of 4, full read "
                    + "\(pass < passes ? "not done" : full.status == 0 ? "ok" : "EIO"), "
                    + "variants in it \(found) (\(issued - issuedBefore) new this mount, \(issued) in all), "
                    + "origin bytes / size \(String(format: "%.2f", result.originBytesPerSize)), "
                    + "unstable: \(result.unstable ?? "no")")
            outcome = result
        }
        return outcome!
    }

    /// The first mount of a host that stitches, read like a player and then
    /// whole (docs/DESIGN.md, "Until two responses agree"): the second
    /// response shows it, each open reads one variant without an error,
    /// the full read is exactly one variant, and the origin sends at most
    /// the budget of 1.25 x the size (the stray response and the stream).
    private func expectFirstMountWithinBudget(_ outcome: Outcome) {
        #expect(outcome.playerErrors == 0)
        #expect(!outcome.fullReadFailed)
        #expect(outcome.variantsInFullRead.count == 1, "exactly one variant, never a mix")
        #expect(outcome.originBytesPerSize <= 1.25)
    }

    /// A fixture of one episode whose host stitches per request at its URL
    /// (an ETag per response), with `fault`, an origin fault entry, besides.
    private func fixtureStitchingAtOneURL(with fault: String) throws -> Fixture {
        let fixture = try Fixture()
        do {
            try fixture.publish(Fixture.episodes(sizes: [Self.size]))
            try fixture.origin.configure(
                "{\"stitch\": {\"/ep1.mp3\": {\"ad_bytes\": \(Self.adBytes), \"mode\": \"same_url\"}}, \(fault)}")
        } catch {
            fixture.cleanup()
            throw error
        }
        return fixture
    }

    /// The `unstable` column of the fixture's one episode, read by Python.
    private func unstableMark(_ fixture: Fixture) throws -> String? {
        let script =
            "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute('SELECT unstable FROM episodes').fetchone(); "
            + "print(r[0] if r and r[0] else '')"
        let text = try Harness.sh("python3 -c \"\(script)\" '\(fixture.cacheDirectory)/index.sqlite'")
        let mark = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return mark.isEmpty ? nil : mark
    }

    @Test func aRedirectToAFreshSignedVariantPerRequestIsPinnedNotUnstable() throws {
        let outcome = try run("302 per request to a signed variant", stitch: "")
        #expect(outcome.unstable == nil)
        #expect(outcome.playerErrors == 0)
        #expect(outcome.variantsInFullRead.count == 1)
    }

    @Test func anETagPerRequestAtOneURLIsMarkedUnstable() throws {
        let outcome = try run("same URL, ETag per request", stitch: ", \"mode\": \"same_url\"")
        #expect(outcome.unstable != nil)
        expectFirstMountWithinBudget(outcome)
    }

    @Test func weakETagsPerRequestAreMarkedUnstable() throws {
        let outcome = try run("same URL, weak ETag per request", stitch: ", \"mode\": \"same_url\", \"etag\": \"weak\"")
        #expect(outcome.unstable != nil)
        expectFirstMountWithinBudget(outcome)
    }

    /// No validator: marked by its first response, before any second one
    /// could show a new length (docs/DESIGN.md, "A version that cannot be
    /// proven").
    @Test func aNewLengthPerRequestWithoutValidatorIsMarkedUnstable() throws {
        let outcome = try run("same URL, no validator, new length", stitch: ", \"mode\": \"same_url\", \"etag\": \"none\"")
        #expect(outcome.unstable == "no-validator")
        expectFirstMountWithinBudget(outcome)
    }

    @Test func aCDNThatAnswersIfRangeWithTheWholeBodyIsMarkedUnstable() throws {
        let outcome = try run("If-Range answered by a 200", stitch: nil, extra: "\"if_range_200\": [\"/ep1.mp3\"]")
        #expect(outcome.unstable == "whole-body-for-range")
        #expect(outcome.variantsInFullRead == [0])
        expectFirstMountWithinBudget(outcome)
    }

    /// Once marked, the next mount streams the episode whole: a player
    /// sees no error, every read is one variant, and the origin sends
    /// about one copy (the budget is 1.25 x the size).
    @Test(arguments: [
        ("same URL, ETag per request", ", \"mode\": \"same_url\"", false),
        ("same URL, no validator, new length", ", \"mode\": \"same_url\", \"etag\": \"none\"", false),
        ("same URL, no validator, same length", ", \"mode\": \"same_url\", \"etag\": \"none\", \"same_length\": true", true),
    ])
    func aMarkedEpisodeIsStreamedWholeInTheNextMount(scenario: (String, String, Bool)) throws {
        let outcome = try run(scenario.0, stitch: scenario.1, sameLength: scenario.2, passes: 2)
        #expect(outcome.unstable != nil)
        #expect(outcome.playerErrors == 0)
        #expect(!outcome.fullReadFailed)
        #expect(outcome.variantsInFullRead.count == 1, "exactly one variant")
        #expect(outcome.originBytesPerSize <= 1.25)
    }

    /// Nothing in a head shows it and an overlap check would only catch
    /// a boundary that falls on new bytes: no validator is the mark.
    @Test func sameLengthNewBytesWithoutValidatorAreStreamedWholeFromTheFirstResponse() throws {
        let outcome = try run(
            "same URL, no validator, same length", stitch: ", \"mode\": \"same_url\", \"etag\": \"none\", \"same_length\": true",
            sameLength: true)
        #expect(outcome.unstable == "no-validator")
        expectFirstMountWithinBudget(outcome)
    }

    /// The second response of a host that stitches per request comes
    /// back before the first one's body has all come (a slow or busy
    /// link): the first open file still waits for bytes of the first
    /// variant, which the first response is bringing. It reads them, no
    /// error; the next open reads one variant. The origin pauses the first
    /// response after 96 KiB, so the overlap is forced. Read with
    /// `O_DIRECT` (podfs's read-ahead asks for the next bytes) and through
    /// the page cache (the kernel's read-ahead asks for them).
    @Test(arguments: [true, false])
    func aSecondVariantThatShowsItselfBeforeTheFirstBodyEndsFailsNoRead(direct: Bool) throws {
        let fixture = try fixtureStitchingAtOneURL(
            with: "\"stall\": {\"path\": \"/ep1.mp3\", \"after_bytes\": 98304, \"seconds\": 2, \"count\": 1}")
        defer { fixture.cleanup() }
        try fixture.mount(extra: ["--log-level", "debug"])
        let path = fixture.path(0)
        let head = try Harness.run(
            "dd", ["if=\(path)", "of=\(fixture.directory)/head", "bs=64k", "count=4"] + (direct ? ["iflag=direct"] : []),
            timeout: 60)
        let stalls = 1 - (try fixture.origin.usesLeft("stall"))
        let finished = try fixture.origin.finished("ep1.mp3")
        let copy = fixture.directory + "/copy"
        let full = try Harness.run("/bin/sh", ["-c", "cat '\(path)' > '\(copy)'"], timeout: 120)
        let issued = try fixture.origin.variants("ep1.mp3")
        let data = fixture.episodes[0].data
        let variantsOf = { (bytes: Data) in
            (1...max(issued, 1)).filter { TestOrigin.variant($0, of: data, adBytes: Self.adBytes).prefix(bytes.count) == bytes }
        }
        let headBytes = (try? Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/head"))) ?? Data()
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
        print("a second variant before the first body ends (\(direct ? "O_DIRECT" : "page cache")): the head's dd exit \(head.status) (\(headBytes.count) bytes, "
            + "variant \(variantsOf(headBytes))), stalls \(stalls), responses \(finished); "
            + "the full read exit \(full.status), variants \(variantsOf(bytes).filter { _ in bytes.count >= data.count })")
        if head.status != 0 || full.status != 0 {
            print(fixture.log().split(separator: "\n").suffix(200).joined(separator: "\n"))
        }
        #expect(stalls >= 1, "the first response really paused")
        #expect(head.status == 0 && headBytes.count == 4 * 65_536, "\(head.stderr)")
        #expect(variantsOf(headBytes).count >= 1, "the head is one variant's")
        #expect(full.status == 0)
        #expect(bytes.count >= data.count && variantsOf(bytes).count == 1, "the next open reads one variant whole")
        try fixture.unmount()
    }

    /// Issue 20, item 3: a seek ahead on a stitching host waits for the
    /// episode's one stream, unless a second whole stream would be sooner.
    /// The origin holds the stream after 1 MiB; a read at 3 MiB waits.
    /// Once the stream was silent long enough (`JoinOrJump.stalledStream`)
    /// a second stream from byte 0 starts and its variant replaces the
    /// first: the waiting read (a file open on the first variant, which
    /// never had those bytes) gets EIO; a new open reads the second variant.
    @Test func aStalledStreamIsReplacedByASecondWholeStreamWhenThatIsSooner() throws {
        let fixture = try fixtureStitchingAtOneURL(
            with: "\"hold\": {\"path\": \"/ep1.mp3\", \"after_bytes\": \(Self.mib), \"seconds\": 60, \"count\": 1}")
        defer { fixture.cleanup() }
        try fixture.mount()
        let path = fixture.path(0)
        // The head, as a player reads it: the second response shows the
        // host stitches and becomes the stream; the origin holds it.
        _ = try Harness.run("dd", ["if=\(path)", "of=/dev/null", "bs=64k", "count=4", "iflag=direct"])
        #expect(Harness.eventually(30) { (try? fixture.origin.held()) ?? 0 >= 1 }, "the stream is held")
        let waited = try Harness.run(
            "dd", ["if=\(path)", "of=/dev/null", "bs=64k", "skip=48", "count=1", "iflag=direct"], timeout: 25)
        let heldMeanwhile = try fixture.origin.held()
        let again = try Harness.run("dd", ["if=\(path)", "of=/dev/null", "bs=64k", "skip=48", "count=1", "iflag=direct"])
        let copy = fixture.directory + "/copy"
        let full = try Harness.run("/bin/sh", ["-c", "cat '\(path)' > '\(copy)'"], timeout: 120)
        try fixture.origin.release()
        let issued = try fixture.origin.variants("ep1.mp3")
        let data = fixture.episodes[0].data
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
        let found = (1...max(issued, 1)).filter { TestOrigin.variant($0, of: data, adBytes: Self.adBytes) == bytes }
        let said = fixture.log().components(separatedBy: "a second one from its start is sooner").count - 1
        print("stalled stream: the waiting read exited \(waited.status), the origin still held \(heldMeanwhile); "
            + "a new open exited \(again.status); variants issued \(issued), full read = \(found); said \(said) time(s)")
        #expect(heldMeanwhile >= 1, "the first stream was still held: the second did not wait for a timeout")
        #expect(waited.status != 0, "the read of the first variant's file never had those bytes")
        #expect(said == 1)
        #expect(again.status == 0 && full.status == 0)
        #expect(found.count == 1 && found.first == issued, "one variant, the second stream's")
    }

    /// A show whose host stitches every episode at one URL, a new length
    /// per request: one open file reads an episode from start to end, as a
    /// player that plays it through does. The second response of the
    /// first episode shows the host stitches, too late for that file: it
    /// read the first variant's head, and no other variant may follow it
    /// (it gets EIO, a new open reads on). The show's next episode is
    /// known to stitch before its first byte: it is streamed whole from
    /// its first open, and its one open file reads one variant, no error.
    @Test func theNextEpisodeOfAShowThatStitchesIsStreamedWholeFromItsFirstOpen() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.size, Self.size + 999, Self.size + 1999]))
        let stitch = "{\"ad_bytes\": \(Self.adBytes), \"mode\": \"same_url\", \"etag\": \"none\"}"
        try fixture.origin.configure(
            "{\"stitch\": {\"/ep1.mp3\": \(stitch), \"/ep2.mp3\": \(stitch), \"/ep3.mp3\": \(stitch)}}")
        try fixture.mount()
        // One open file, every read of it reaching podfs (O_DIRECT), in
        // order from the first byte to the last.
        let play = { (index: Int) throws -> (status: Int32, found: [Int], errors: String) in
            let copy = fixture.directory + "/play\(index)"
            let output = try Harness.run(
                "dd", ["if=\(fixture.path(index))", "of=\(copy)", "bs=64k", "iflag=direct"], timeout: 120)
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
            let issued = try fixture.origin.variants("ep\(index + 1).mp3")
            let data = fixture.episodes[index].data
            let found = (1...max(issued, 1)).filter { TestOrigin.variant($0, of: data, adBytes: Self.adBytes) == bytes }
            return (output.status, found, output.stderr)
        }
        let first = try play(0)
        try fixture.origin.reset()
        let next = try play(1)
        let sent = try fixture.origin.variantBytesSent("ep2.mp3")
        let size = fixture.episodes[1].data.count
        let attribute = try Harness.sh("getfattr --only-values -n user.podfs.variant '\(fixture.path(1))'")
        print(
            "a show that stitches: its first episode played through one open file: dd exit \(first.status) "
                + "(\(first.found)); its next: dd exit \(next.status), variant \(next.found), origin bytes / size "
                + String(format: "%.2f", Double(sent) / Double(size)) + ", user.podfs.variant: \(attribute)")
        #expect(next.status == 0, "\(next.errors)")
        #expect(next.found.count == 1, "exactly one variant")
        #expect(Double(sent) <= 1.25 * Double(size))
        #expect(attribute.contains("as another episode of its show"), "\(attribute)")
        // The next mount knows it from the index: the third episode, never
        // opened before, reads the same way.
        try fixture.unmount()
        try fixture.mount()
        let third = try play(2)
        print("after a remount, the third episode: dd exit \(third.status), variant \(third.found)")
        #expect(third.status == 0, "\(third.errors)")
        #expect(third.found.count == 1, "exactly one variant")
        try fixture.unmount()
    }

    /// An origin that drops its ETag while it serves other bytes at the
    /// same length: the response without it is another version, never
    /// spliced onto the cached bytes.
    @Test func anETagThatVanishesMidMountIsNeverSplicedOn() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [Self.size]))
        // Every response stops after 512 KiB until released, so what the
        // jump below asks for comes after the change.
        try fixture.origin.configure(
            "{\"hold\": {\"path\": \"/ep1.mp3\", \"after_bytes\": 524288, \"seconds\": 60}}")
        try fixture.mount()
        // 1 MiB: past the head (`Tuning.head`), so the read-ahead asks for
        // more than the hold lets through.
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=64k count=16 iflag=direct 2>/dev/null")
        #expect(Harness.eventually(30) { (try? fixture.origin.held()) ?? 0 >= 1 })
        let other = Harness.bytes(count: Self.size, seed: 77)
        try fixture.origin.replace("ep1.mp3", other)
        try fixture.origin.configure("{\"no_etag\": [\"/ep1.mp3\"]}")
        // A jump far ahead of the held response asks the origin again.
        let jump = try Harness.run(
            "dd", ["if=\(fixture.path(0))", "of=/dev/null", "bs=64k", "skip=80", "count=1", "iflag=direct"], timeout: 60)
        try fixture.origin.clearFaults()
        try fixture.origin.configure("{\"no_etag\": [\"/ep1.mp3\"]}")
        print("the jump: dd exit \(jump.status), requests \(try fixture.origin.requests("ep1.mp3"))")
        let copy = fixture.directory + "/copy"
        let full = try Harness.run("/bin/sh", ["-c", "cat '\(fixture.path(0))' > '\(copy)'"], timeout: 300)
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: copy))) ?? Data()
        let which = bytes == fixture.episodes[0].data ? "the old" : bytes == other ? "the new" : "a mix"
        try fixture.unmount()
        let mark = try unstableMark(fixture)
        print("ETag dropped mid-mount: full read \(full.status == 0 ? "ok" : "EIO"), \(which) bytes, unstable: \(mark ?? "no")")
        #expect(full.status != 0 || which != "a mix", "never a mix")
        #expect(mark?.contains("vanished") == true)
    }
}
