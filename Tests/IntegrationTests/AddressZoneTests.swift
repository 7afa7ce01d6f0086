import Foundation
import TestSupport
import Testing

/// The address-zone rule through a real mount (DESIGN.md, guarantee 6).
///
/// Three origins inside the test's own network namespace: one on 127.0.0.1
/// (loopback), one on 10.23.0.1 (private) and one on 10.23.0.2, which the
/// daemon is told to count as public (`PODFS_TEST_TREAT_AS_PUBLIC`, honoured
/// only by the policy, for tests only: a namespace with nothing but loopback
/// has no real public address). Each origin's request log shows what podfs
/// really fetched from it: a refused episode must leave no trace there, and
/// the same feed under `-o allow_private` shows the log would have seen it.
/// The policy's every notation and zone is tested without sockets in
/// AddressPolicyTests; this suite checks the wiring: literal URLs, names
/// resolved by DNS (`localhost`), redirects, and the zone of the feed.
@Suite(
    .serialized, .needsRoot,
    .needs(NetworkNamespace.isPrivate ? nil : "needs its own network namespace (scripts/test)"))
struct AddressZoneTests {
    // MARK: - Fixtures

    /// The origins, each serving `x.mp3`.
    private final class Origins {
        let fixture: Fixture
        let loopback: TestOrigin
        let privateNetwork: TestOrigin
        let publicStandIn: TestOrigin
        let data = Harness.bytes(count: 60_000, seed: 11)

        init() throws {
            try NetworkNamespace.addressesReady.get()
            fixture = try Fixture()
            loopback = fixture.origin
            privateNetwork = try TestOrigin(root: fixture.directory + "/private/origin", host: NetworkNamespace.privateAddress)
            publicStandIn = try TestOrigin(root: fixture.directory + "/public/origin", host: NetworkNamespace.publicStandIn)
            for origin in all { try origin.put("x.mp3", data) }
        }

        var all: [TestOrigin] { [loopback, privateNetwork, publicStandIn] }

        /// Requests each origin saw for anything but feeds, by origin.
        func episodeRequests(_ origin: TestOrigin) throws -> [String: Int] {
            let paths = try origin.stats()["paths"] as? [String: [String: Any]] ?? [:]
            var result: [String: Int] = [:]
            for (path, entry) in paths where !path.hasSuffix(".xml") {
                result[path] = (entry["requests"] as? NSNumber)?.intValue ?? 0
            }
            return result
        }

        func reset() throws { for origin in all { try origin.reset() } }

        func stop() {
            privateNetwork.stop()
            publicStandIn.stop()
            fixture.cleanup()
        }
    }

    private static let environment = ["PODFS_TEST_TREAT_AS_PUBLIC": NetworkNamespace.publicStandIn]

    /// `cat` of an episode: its bytes, or `nil` when the read failed with EIO.
    private func read(_ path: String) throws -> Data? {
        let output = try Harness.run("cat", [path], timeout: 60)
        if output.status == 0 { return output.stdout }
        #expect(output.stderr.contains("Input/output error"), "\(path): \(output.stderr)")
        return nil
    }

    /// Every notation of the loopback origin's address (and a name for it).
    private func loopbackSpellings(port: Int) -> [(title: String, url: String)] {
        [
            ("Loopback dotted", "http://127.0.0.1:\(port)/x.mp3"),
            ("Loopback decimal", "http://2130706433:\(port)/x.mp3"),
            ("Loopback hex", "http://0x7f000001:\(port)/x.mp3"),
            ("Loopback dotted hex", "http://0x7f.0.0.1:\(port)/x.mp3"),
            ("Loopback octal", "http://0177.0.0.1:\(port)/x.mp3"),
            ("Loopback short", "http://127.1:\(port)/x.mp3"),
            ("Loopback mapped", "http://[::ffff:127.0.0.1]:\(port)/x.mp3"),
            ("Loopback mapped hex", "http://[::ffff:7f00:1]:\(port)/x.mp3"),
            ("Loopback name", "http://localhost:\(port)/x.mp3"),
        ]
    }

    // MARK: - Tests

    @Test func aPublicFeedReachesPublicAddressesOnly() throws {
        let origins = try Origins()
        let mounts = SafetyMount(origins.fixture)
        defer {
            mounts.cleanup()
            origins.stop()
        }
        let (loop, priv, pub) = (origins.loopback, origins.privateNetwork, origins.publicStandIn)
        // Redirects from the public origin towards loopback and private,
        // by address and by name.
        try pub.configure("""
            {"redirects": {"/to-loopback.mp3": "\(loop.base)/x.mp3", "/to-private.mp3": "\(priv.base)/x.mp3",
             "/to-name.mp3": "http://localhost:\(loop.port)/x.mp3"}}
            """)
        let items: [(title: String, url: String)] =
            [("Public", "\(pub.base)/x.mp3"), ("Private", "\(priv.base)/x.mp3"),
             ("Private decimal", "http://169279489:\(priv.port)/x.mp3"),
             ("Redirect to loopback", "\(pub.base)/to-loopback.mp3"),
             ("Redirect to private", "\(pub.base)/to-private.mp3"),
             ("Redirect to name", "\(pub.base)/to-name.mp3")]
            + loopbackSpellings(port: loop.port)
        try pub.put("feed.xml", SafetyMount.feed(title: "Public Feed", items: items))
        // A feed URL you give is yours, but where a public server redirects
        // it is not: a move to loopback is refused like any other hop.
        try loop.put("moved.xml", SafetyMount.feed(title: "Moved Feed", items: [("Moved", "\(loop.base)/x.mp3")]))
        try pub.configure(#"{"redirects": {"/moved.xml": "\#(loop.base)/moved.xml"}}"#)
        let output = try mounts.mount(
            ["\(pub.base)/feed.xml", "\(pub.base)/moved.xml"], environment: Self.environment,
            waitFor: .paths(["Public Feed/Public.mp3"]))
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("left out \(pub.base)/moved.xml"), "\(output.stderr)")
        #expect(SafetyMount.listing(origins.fixture.mountpoint) == ["Latest.m3u", "Public Feed"])

        let folder = origins.fixture.mountpoint + "/Public Feed"
        #expect(try read(folder + "/Public.mp3") == origins.data)
        for item in items where item.title != "Public" {
            #expect(try read(folder + "/\(item.title).mp3") == nil, "\(item.title) was read")
        }
        let (loopSaw, privSaw) = (try origins.episodeRequests(loop), try origins.episodeRequests(priv))
        #expect(loopSaw.isEmpty, "loopback origin saw \(loopSaw)")
        #expect(try loop.requests("moved.xml") == 0, "the moved feed was fetched from loopback")
        #expect(privSaw.isEmpty, "private origin saw \(privSaw)")
        let log = origins.fixture.log()
        #expect(log.contains("podfs refuses to connect to"))
        #expect(log.contains("allow_private"))
        try mounts.unmount()

        // The same feeds with -o allow_private: every spelling of the
        // loopback origin is fetched from it, so the log above would have
        // shown a fetch.
        try origins.reset()
        try mounts.mountOrThrow(
            ["\(pub.base)/feed.xml", "\(pub.base)/moved.xml"], extra: ["-o", "allow_private"], environment: Self.environment,
            waitFor: .paths(["Moved Feed/Moved.mp3", "Public Feed/Public.mp3"]))
        #expect(SafetyMount.listing(origins.fixture.mountpoint) == ["Latest.m3u", "Moved Feed", "Public Feed"])
        for item in items {
            #expect(try read(folder + "/\(item.title).mp3") == origins.data, "\(item.title) with allow_private")
        }
        #expect(try origins.episodeRequests(loop)["/x.mp3", default: 0] >= 11)
        #expect(try origins.episodeRequests(priv)["/x.mp3", default: 0] >= 2)
        try mounts.unmount()
    }

    @Test func aPrivateFeedReachesPrivateAndPublicButNotLoopback() throws {
        let origins = try Origins()
        let mounts = SafetyMount(origins.fixture)
        defer {
            mounts.cleanup()
            origins.stop()
        }
        let (loop, priv, pub) = (origins.loopback, origins.privateNetwork, origins.publicStandIn)
        try priv.configure("""
            {"redirects": {"/to-loopback.mp3": "\(loop.base)/x.mp3", "/to-public.mp3": "\(pub.base)/x.mp3"}}
            """)
        // The public origin redirects back into the private network: the
        // public server wrote that hop, so it is refused even though the
        // feed itself is private.
        try pub.configure(#"{"redirects": {"/back.mp3": "\#(priv.base)/x.mp3"}}"#)
        let items: [(title: String, url: String)] =
            [("Private", "\(priv.base)/x.mp3"), ("Public", "\(pub.base)/x.mp3"),
             ("Private decimal", "http://169279489:\(priv.port)/x.mp3"),
             ("Redirect to public", "\(priv.base)/to-public.mp3"),
             ("Redirect to loopback", "\(priv.base)/to-loopback.mp3"),
             ("Public back to private", "\(pub.base)/back.mp3")]
            + loopbackSpellings(port: loop.port)
        try priv.put("feed.xml", SafetyMount.feed(title: "Private Feed", items: items))
        let listed = Fixture.Listing.paths(["Private Feed/Private.mp3"])
        try mounts.mountOrThrow(["\(priv.base)/feed.xml"], environment: Self.environment, waitFor: listed)

        let folder = origins.fixture.mountpoint + "/Private Feed"
        for title in ["Private", "Public", "Redirect to public"] {
            #expect(try read(folder + "/\(title).mp3") == origins.data, "\(title)")
        }
        try origins.reset()
        for item in items where item.title.contains("oopback") || item.title.contains("back to") {
            #expect(try read(folder + "/\(item.title).mp3") == nil, "\(item.title) was read")
        }
        let loopSaw = try origins.episodeRequests(loop)
        #expect(loopSaw.isEmpty, "loopback origin saw \(loopSaw)")
        // Only the redirecting requests themselves reached an origin.
        #expect(try origins.episodeRequests(priv).keys.sorted() == ["/to-loopback.mp3"])
        #expect(try origins.episodeRequests(pub).keys.sorted() == ["/back.mp3"])
        try mounts.unmount()

        // The feed's origin answers 503: the mount shows the cached copy,
        // whose zone is then where its URL leads (private), not "unknown".
        try priv.configure(#"{"status": {"/feed.xml": {"code": 503}}}"#)
        try origins.reset()
        try mounts.mountOrThrow(["\(priv.base)/feed.xml"], environment: Self.environment, waitFor: listed)
        // A remount shows the kept copy at once and hears the 503 in the
        // background (issue 21): the refresh keeps that listing.
        #expect(
            Harness.eventually {
                let log = origins.fixture.log()
                return log.contains("using the last good copy") || log.contains("keeping the previous listing")
            }, "the 503 was heard and the kept copy stayed")
        #expect(try read(folder + "/Private decimal.mp3") == origins.data)
        #expect(try read(folder + "/Loopback dotted.mp3") == nil)
        #expect(try read(folder + "/Loopback name.mp3") == nil)
        let loopAfter = try origins.episodeRequests(loop)
        #expect(loopAfter.isEmpty, "loopback origin saw \(loopAfter)")
        try mounts.unmount()
    }

    @Test func aLoopbackFeedReachesLoopbackAndPrivate() throws {
        let origins = try Origins()
        let mounts = SafetyMount(origins.fixture)
        defer {
            mounts.cleanup()
            origins.stop()
        }
        let (loop, priv, pub) = (origins.loopback, origins.privateNetwork, origins.publicStandIn)
        try pub.configure(#"{"redirects": {"/to-loopback.mp3": "\#(loop.base)/x.mp3"}}"#)
        let items: [(title: String, url: String)] = [
            ("Loopback", "\(loop.base)/x.mp3"), ("Loopback name", "http://localhost:\(loop.port)/x.mp3"),
            ("Private", "\(priv.base)/x.mp3"), ("Public", "\(pub.base)/x.mp3"),
            ("Public to loopback", "\(pub.base)/to-loopback.mp3"),
        ]
        try loop.put("feed.xml", SafetyMount.feed(title: "Loopback Feed", items: items))
        try mounts.mountOrThrow(
            ["\(loop.base)/feed.xml"], environment: Self.environment, waitFor: .paths(["Loopback Feed/Loopback.mp3"]))
        let folder = origins.fixture.mountpoint + "/Loopback Feed"
        for title in ["Loopback", "Loopback name", "Private", "Public"] {
            #expect(try read(folder + "/\(title).mp3") == origins.data, "\(title)")
        }
        try origins.reset()
        // A public server's redirect back to this machine is refused.
        #expect(try read(folder + "/Public to loopback.mp3") == nil)
        #expect(try origins.episodeRequests(loop).isEmpty)
        try mounts.unmount()
    }
}
