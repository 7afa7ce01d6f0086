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
