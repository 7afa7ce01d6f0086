import Foundation
import Testing

/// Hosts that stitch ads per request (docs/DESIGN.md, "Episodes and their
/// variants"): a file's bytes are one variant, pinned across mounts, and a
/// remount fetches only what is missing. The origin redirects each request
/// of the enclosure URL to a fresh signed link of a new variant with its
/// own strong ETag (origin.py's `stitch`, Megaphone-like).
@Suite(.serialized, .needsRoot)
struct StitchedOriginTests {
    private static let mib = 1024 * 1024
    private static let adBytes = 65_536

    /// Which variants (1...issued) `copy` is byte for byte.
    private func matches(_ copy: Data, _ fixture: Fixture, issued: Int) -> [Int] {
        (1...max(issued, 1)).filter {
            TestOrigin.variant($0, of: fixture.episodes[0].data, adBytes: Self.adBytes) == copy
        }
    }

    private func stitch(_ fixture: Fixture, expiresAfter: Double? = nil) throws {
        let expiry = expiresAfter.map { ", \"expires_after\": \($0)" } ?? ""
        try fixture.origin.configure("{\"stitch\": {\"/ep1.mp3\": {\"ad_bytes\": \(Self.adBytes)\(expiry)}}}")
    }

    @Test func aStitchedEpisodeIsOneVariantPinnedAcrossARemount() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [6 * Self.mib + 12_345]))
        try stitch(fixture)
        // The first variant's body stops after 3 MiB until the unmount, so
        // the read-ahead leaves the episode partial.
        try fixture.origin.configure(
            "{\"hold\": {\"path\": \"/_variants/ep1.mp3.v1\", \"after_bytes\": \(3 * Self.mib), \"seconds\": 60}}")
        try fixture.mount()
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=1M count=2 2>/dev/null")
        let started = Date()
        try fixture.unmount()
        try fixture.origin.release()
        print("unmount with a held response took \(Date().timeIntervalSince(started)) s")
        try fixture.origin.clearFaults()
        try stitch(fixture)
        let cached = try #require(try CacheStatus(fixture.cacheDirectory)[fixture.name(0)]).cachedBytes
        let issuedBefore = try fixture.origin.variants("ep1.mp3")
        #expect(cached >= 2 * Self.mib)

        try fixture.origin.reset()
        try fixture.mount()
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: copy))
        let issued = try fixture.origin.variants("ep1.mp3")
        let sent = try fixture.origin.variantBytesSent("ep1.mp3")
        let found = matches(bytes, fixture, issued: issued)
        print(
            "stitched per request: \(cached) bytes cached before the remount; after it \(sent) bytes sent for "
                + "\(bytes.count - cached) missing (\(String(format: "%.3f", Double(sent) / Double(bytes.count))) x "
                + "the size); variants issued \(issuedBefore) then \(issued); full read = variant \(found)")
        #expect(found.count == 1, "the full read is exactly one variant")
        // Users can see it: an attribute of the file, and podfs status.
        let attribute = try Harness.sh("getfattr --only-values -n user.podfs.variant '\(fixture.path(0))'")
        try fixture.unmount()
        let json = try Harness.run(Harness.podfs, ["status", "--cache-dir", fixture.cacheDirectory, "--json"])
        let text = try Harness.sh("'\(Harness.podfs)' status --cache-dir '\(fixture.cacheDirectory)'")
        print("user.podfs.variant: \(attribute)")
        #expect(attribute.contains("pinned"))
        #expect(json.text.contains("\"pinned\" : true") && json.text.contains("\"final\" : true"), "\(json.text)")
        #expect(text.contains("final, pinned"), "\(text)")
        try fixture.mount()
        #expect(issued == issuedBefore, "the remount asked the pinned link, not the enclosure URL")
        #expect(try fixture.origin.requests("ep1.mp3") == 0)
        #expect(sent <= Int64(bytes.count - cached) + 64 * 1024, "the remount fetched only the missing bytes")
    }

    @Test func anExpiredPinnedLinkFollowsTheEnclosureAgain() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib]))
        try stitch(fixture, expiresAfter: 1)
        try fixture.mount()
        try Harness.sh("dd if='\(fixture.path(0))' of=/dev/null bs=64k count=1 2>/dev/null")
        try fixture.unmount()
        // The link podfs pinned expires: a second after it was issued the
        // origin answers it with 403 (asserted below from its counters).
        Thread.sleep(forTimeInterval: 1.5)
        try fixture.origin.reset()
        try fixture.mount()
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: copy))
        let issued = try fixture.origin.variants("ep1.mp3")
        let found = matches(bytes, fixture, issued: issued)
        let pinned = try fixture.origin.statuses("_variants/ep1.mp3.v1")
        print("expired pinned link: answers \(pinned), variants issued \(issued), full read = variant \(found)")
        #expect(pinned.contains(403), "the pinned link was asked and had expired")
        #expect(found.count == 1, "the full read is exactly one variant")
        #expect(issued >= 2, "the enclosure URL was followed again")
        // The log says why the cached 64 KiB went, once.
        let said = fixture.log().components(separatedBy: "stopped working, and the host now serves another variant")
        #expect(said.count == 2, "\(fixture.log())")
    }

    /// Issue 20, item 5: a player holds the file open when the variant it
    /// reads is gone (its link expired, the enclosure leads to another).
    /// It keeps reading what was cached of its variant and gets EIO only
    /// for bytes it never had; a new open reads the new variant whole.
    @Test func aFileOpenWhenItsVariantIsGoneReadsWhatItHadAndEIOForTheRest() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [16 * Self.mib]))
        try stitch(fixture, expiresAfter: 1)
        // The first variant stops after 2 MiB, so it stays partial.
        try fixture.origin.configure(
            "{\"hold\": {\"path\": \"/_variants/ep1.mp3.v1\", \"after_bytes\": \(2 * Self.mib), \"seconds\": 60}}")
        try fixture.mount()
        // One open file (O_DIRECT: every read reaches podfs): the first
        // MiB, then, once the pinned link expired, 12 MiB in (never had),
        // then the first MiB again.
        let script = """
            import mmap, os, sys, time
            fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 1 << 20)
            def read(offset, name):
                try:
                    got = os.preadv(fd, [buf], offset)
                    open(name, "wb").write(buf[:got])
                    return "ok"
                except OSError as error:
                    return "errno %d" % error.errno
            first = read(0, sys.argv[2] + "/first")
            time.sleep(1.6)
            never = read(12 << 20, sys.argv[2] + "/never")
            again = read(0, sys.argv[2] + "/again")
            os.close(fd)
            print(first, never, again, sep=",")
            """
        let outcome = try Harness.run("python3", ["-c", script, fixture.path(0), fixture.directory], timeout: 60)
        let results = outcome.text.trimmingCharacters(in: .whitespacesAndNewlines).components(separatedBy: ",")
        let pinned = try fixture.origin.statuses("_variants/ep1.mp3.v1")
        print("a file open when its variant went: reads \(results) (first MiB, 12 MiB in, first MiB again); "
            + "pinned link answered \(pinned)")
        try fixture.origin.release()
        #expect(pinned.contains(403), "the pinned link was asked and had expired")
        #expect(try fixture.origin.variants("ep1.mp3") >= 2, "the enclosure led to another variant")
        #expect(results == ["ok", "errno 5", "ok"], "\(outcome.stderr)")
        let episode = fixture.episodes[0].data
        let prefix = TestOrigin.variant(1, of: episode, adBytes: Self.adBytes).prefix(Self.mib)
        let first = try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/first"))
        let again = try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/again"))
        #expect(first == prefix, "the first MiB of the first variant")
        #expect(again == first, "read again from the bytes that version had")
        // A new open reads the new variant, whole and alone.
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
        let found = matches(try Data(contentsOf: URL(fileURLWithPath: copy)), fixture, issued: try fixture.origin.variants("ep1.mp3"))
        #expect(found.count == 1 && found != [1], "one variant, the new one: \(found)")
    }

    @Test func aCompleteEpisodeIsKeptWhenItsLinkExpiredAndTheHostServesAnotherVariant() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [3 * Self.mib]))
        try stitch(fixture, expiresAfter: 1)
        try fixture.mount()
        let first = fixture.directory + "/first"
        try Harness.sh("cat '\(fixture.path(0))' > '\(first)'")
        try fixture.unmount()
        let kept = try Data(contentsOf: URL(fileURLWithPath: first))
        #expect(matches(kept, fixture, issued: try fixture.origin.variants("ep1.mp3")).count == 1)
        // The pinned link expires; the enclosure leads to a new variant.
        Thread.sleep(forTimeInterval: 1.5)
        for _ in 0..<2 {
            try fixture.origin.reset()
            try fixture.mount()
            let copy = fixture.directory + "/copy"
            try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'")
            let sent = try fixture.origin.variantBytesSent("ep1.mp3")
            let pinned = try fixture.origin.statuses("_variants/ep1.mp3.v1")
            try fixture.unmount()
            #expect(pinned.contains(403), "the pinned link was asked and had expired")
            print("complete episode, remount: origin sent \(sent) bytes, pinned link answered \(pinned)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == kept, "the same variant as before")
            #expect(sent <= 64 * 1024, "at most 64 KiB of origin traffic")
        }
        #expect(try fixture.origin.variants("ep1.mp3") == 1, "the enclosure was not followed to another variant")
    }
}
