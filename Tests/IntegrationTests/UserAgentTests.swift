import Foundation
import Testing

/// podfs names itself to hosts, for feeds and for episode bytes alike, and
/// `-o user_agent=` replaces the name for hosts that refuse clients they do
/// not know (issue 21, "Be a good client"). What the origin saw is read
/// from its own record of each request's header.
@Suite(.serialized, .needsRoot)
struct UserAgentTests {
    @Test func everyRequestNamesPodfsAndItsVersion() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [300_000]))
        try fixture.origin.reset()
        try fixture.mount()
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        let version = try Harness.run(Harness.podfs, ["--version"]).text.trimmingCharacters(in: .whitespacesAndNewlines)
        // `0.1.0 (commit abc1234)`: the number comes first.
        let number = try #require(version.split(separator: " ").first.map(String.init), "podfs --version: \(version)")
        let expected = "podfs/\(number) (FUSE podcast file system)"
        #expect(try fixture.origin.userAgents("feed.xml") == [expected])
        #expect(try fixture.origin.userAgents("ep1.mp3") == [expected])
        try fixture.unmount()
    }

    @Test func userAgentReplacesItForFeedsAndEpisodes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [300_000]))
        try fixture.origin.reset()
        try fixture.mount(extra: ["-o", "user_agent=MyPlayer/2.0 (Linux)"])
        #expect(try fixture.hashOfCopy(0) == fixture.originHash(0))
        #expect(try fixture.origin.userAgents("feed.xml") == ["MyPlayer/2.0 (Linux)"])
        #expect(try fixture.origin.userAgents("ep1.mp3") == ["MyPlayer/2.0 (Linux)"])
        try fixture.unmount()
    }
}
