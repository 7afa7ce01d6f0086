import Foundation
import Testing

/// Proxy variables in the daemon's environment are ignored (issue 18): with
/// a proxy, the address-zone rule would see only the proxy's address. Here
/// every variable libcurl reads names a port that refuses connections, so a
/// daemon that used one could read nothing.
@Suite(.serialized, .needsRoot)
struct ProxyEnvironmentTests {
    private static let refusing = "http://127.0.0.1:1"
    private static let environment = [
        "http_proxy": refusing, "https_proxy": refusing, "HTTPS_PROXY": refusing, "all_proxy": refusing,
        "ALL_PROXY": refusing,
    ]

    @Test func proxyVariablesInTheEnvironmentAreIgnored() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        // The proxy really refuses: a plain curl with the same environment
        // cannot reach the origin through it.
        let curl = try Harness.run(
            "env", Self.environment.map { "\($0.key)=\($0.value)" }.sorted()
                + ["curl", "-sS", "-o", "/dev/null", "\(fixture.origin.base)/feed.xml"], timeout: 30)
        #expect(curl.status != 0, "curl reached the origin through \(Self.refusing)")

        let data = Harness.bytes(count: 50_000, seed: 21)
        try fixture.origin.put("ep.mp3", data)
        try fixture.origin.put(
            "feed.xml", SafetyMount.feed(title: "Proxied", items: [(title: "Ep", url: "\(fixture.origin.base)/ep.mp3")]))
        try mounts.mountOrThrow(
            ["\(fixture.origin.base)/feed.xml"], environment: Self.environment, waitFor: .paths(["Proxied/Ep.mp3"]))

        let read = try Harness.run("cat", [fixture.mountpoint + "/Proxied/Ep.mp3"], timeout: 60)
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stdout == data)
        // The bytes came straight from the origin, not through the variables.
        #expect(try fixture.origin.requests("ep.mp3") >= 1)
        #expect(fixture.log().contains("ignoring http_proxy"), "the log says the variables were ignored")
        try mounts.unmount()
    }

    @Test func aProxyAskedForIsUsedAndTheLogSaysWhatTheZoneRuleSees() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        let data = Harness.bytes(count: 50_000, seed: 22)
        try fixture.origin.put("ep.mp3", data)
        try fixture.origin.put(
            "feed.xml", SafetyMount.feed(title: "Proxied", items: [(title: "Ep", url: "\(fixture.origin.base)/ep.mp3")]))
        // The only way to the origin is through the refusing proxy.
        // Nothing to wait for: the feed cannot load through this proxy.
        _ = try mounts.mount(["\(fixture.origin.base)/feed.xml"], extra: ["-o", "proxy=\(Self.refusing)"], waitFor: .none)
        let log = fixture.log()
        #expect(log.contains("proxy: every request goes through http://127.0.0.1:1"), "\(log)")
        #expect(log.contains("127.0.0.1, a loopback address"), "\(log)")
        #expect(try fixture.origin.requests("feed.xml") == 0, "the feed was fetched around the proxy")
        #expect(try fixture.origin.requests("ep.mp3") == 0)
    }
}
