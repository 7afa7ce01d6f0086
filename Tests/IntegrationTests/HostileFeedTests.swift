import Foundation
import Testing

/// Feeds written to attack, served by the real test origin and mounted for
/// real (issue 5, "Safety"): entity bombs, external entities, DTDs and
/// XInclude fetch nothing and cost little memory; enclosures and redirects
/// that are not plain http(s) are neither shown nor followed; a feed over
/// the size limit is refused without being held.
@Suite(.serialized, .needsRoot)
struct HostileFeedTests {
    // MARK: - Fixtures

    private static let laughs = """
        <?xml version="1.0"?>
        <!DOCTYPE rss [
          <!ENTITY lol "lol">
          <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
          <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
          <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
          <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
          <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
          <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
          <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
          <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
        ]>
        <rss><channel><title>Laughs &lol9;</title>
        <item><title>&lol9;</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
        """

    /// One 64 KiB entity referenced 40,000 times: 2.6 GB if expanded.
    private static let quadratic: String = {
        let big = String(repeating: "A", count: 65_536)
        let references = String(repeating: "&big;", count: 40_000)
        return """
            <?xml version="1.0"?>
            <!DOCTYPE rss [<!ENTITY big "\(big)">]>
            <rss><channel><title>Quadratic \(references)</title>
            <item><title>E</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
            """
    }()

    /// Feeds that must be refused whole, by file name.
    private static let refusedFeeds: [String: String] = [
        "laughs.xml": laughs,
        "quadratic.xml": quadratic,
        "xxe-file.xml": """
            <!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <rss><channel><title>XXE File &xxe;</title>
            <item><title>&xxe;</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
            """,
        "xxe-url.xml": """
            <!DOCTYPE rss [<!ENTITY xxe SYSTEM "{{BASE}}/secret.txt">]>
            <rss><channel><title>XXE URL &xxe;</title>
            <item><title>&xxe;</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
            """,
        "parameter.xml": """
            <!DOCTYPE rss [<!ENTITY % p SYSTEM "{{BASE}}/evil.dtd"> %p;]>
            <rss><channel><title>Parameter</title>
            <item><title>E</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
            """,
    ]

    /// Feeds that parse, with what they point at left alone.
    private static let inertFeeds: [String: String] = [
        "dtd.xml": """
            <!DOCTYPE rss SYSTEM "{{BASE}}/external.dtd">
            <rss><channel><title>DTD Show</title>
            <item><title>Dtd Episode</title><enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item></channel></rss>
            """,
        "xinclude.xml": """
            <?xml version="1.0"?>
            <?xml-stylesheet type="text/xsl" href="{{BASE}}/style.xsl"?>
            <rss xmlns:xi="http://www.w3.org/2001/XInclude"><channel>
            <title>XInclude Show<xi:include href="{{BASE}}/include.xml" parse="text"/></title>
            <item><title>Included <xi:include href="file:///etc/passwd" parse="text"/></title>
            <enclosure url="{{BASE}}/ep1.mp3" type="audio/mpeg"/></item>
            <item><title>Remote <xi:include href="{{BASE}}/include.xml" parse="text"/></title>
            <enclosure url="{{BASE}}/ep1.mp3?2" type="audio/mpeg"/></item></channel></rss>
            """,
    ]

    /// What a fetch of an attacker's pointer would have asked the origin for.
    private static let bait = ["/secret.txt", "/evil.dtd", "/external.dtd", "/include.xml", "/style.xsl"]

    // MARK: - Helpers

    /// Reads `Good.mp3` (its bytes are `good`) and each refused title in
    /// `folder`: every refused one fails with EIO, nothing behind a
    /// `Location` (`/cdn/...`) was asked of the origin, and the log says
    /// each refusal's reason. Returns the origin's per-path counters.
    private static func expectRefused(
        _ refused: [(title: String, reason: String)], folder: String, good: Data, fixture: Fixture
    ) throws -> [String: Any] {
        let read = try Harness.run("cat", [folder + "/Good.mp3"], timeout: 60)
        #expect(read.status == 0 && read.stdout == good)
        for target in refused {
            let read = try Harness.run("cat", [folder + "/\(target.title).mp3"], timeout: 60)
            #expect(read.status != 0, "\(target.title) was read")
            #expect(read.stderr.contains("Input/output error"), "\(target.title): \(read.stderr)")
        }
        let stats = try fixture.origin.stats()["paths"] as? [String: Any] ?? [:]
        #expect(!stats.keys.contains { $0.hasPrefix("/cdn") }, "followed: \(stats.keys.filter { $0.hasPrefix("/cdn") })")
        let log = fixture.log()
        for target in refused {
            #expect(log.contains(target.reason), "the log says why \(target.title) was refused")
        }
        return stats
    }

    // MARK: - Tests

    @Test func entityBombsExternalEntitiesAndXIncludeFetchNothingAndStaySmall() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        try fixture.publish(Fixture.episodes(sizes: [100_000]))
        for (name, body) in Self.refusedFeeds.merging(Self.inertFeeds, uniquingKeysWith: { a, _ in a }) {
            try fixture.origin.put(name, Data(body.utf8))
        }
        for path in Self.bait { try fixture.origin.put(String(path.dropFirst()), Data("root:x:0:0 bait\n".utf8)) }
        let base = fixture.origin.base

        // The daemon's memory with one ordinary feed, for comparison.
        try mounts.mountOrThrow(["\(base)/feed.xml"])
        let baselinePID = try #require(mounts.daemonPID)
        let baseline = try #require(SafetyMount.memory(of: baselinePID))
        try mounts.unmount()
        try fixture.origin.reset()

        let hostile = (Self.refusedFeeds.keys.sorted() + Self.inertFeeds.keys.sorted()).map { "\(base)/\($0)" }
        let inert = fixture.publishedPaths + ["DTD Show/Dtd Episode.mp3", "XInclude Show"]
        let output = try mounts.mount(["\(base)/feed.xml"] + hostile, waitFor: .paths(inert))
        #expect(output.status == 0, "\(output.stderr)")
        let pid = try #require(mounts.daemonPID)
        let memory = try #require(SafetyMount.memory(of: pid))
        print("daemon memory (KiB): one feed: peak \(baseline.peak), now \(baseline.now); with the hostile feeds: "
            + "peak \(memory.peak), now \(memory.now)")
        // 3 GB (billion laughs) and 2.6 GB (quadratic) if expanded; the
        // documents themselves are 2.6 MB at most.
        #expect(memory.peak - baseline.peak < 32 * 1024, "peak grew by \(memory.peak - baseline.peak) KiB")

        #expect(SafetyMount.listing(fixture.mountpoint) == ["DTD Show", "Latest.m3u", "Test Show", "XInclude Show"])
        for name in Self.refusedFeeds.keys {
            #expect(output.stderr.contains("left out \(base)/\(name)"), "\(name) is reported: \(output.stderr)")
        }
        #expect(output.stderr.contains("declares XML entities"))
        // Its two episodes (and the show's playlist), nothing included.
        let included = SafetyMount.listing(fixture.mountpoint + "/XInclude Show").filter { !$0.hasSuffix(".m3u") }
        #expect(included.count == 2, "\(included)")
        #expect(!included.contains { $0.contains("root") || $0.contains("bait") }, "\(included)")

        let stats = try fixture.origin.stats()
        let paths = Set((stats["paths"] as? [String: Any] ?? [:]).keys)
        #expect(paths.isDisjoint(with: Self.bait), "fetched: \(paths.intersection(Self.bait))")
        let feedPaths = Set((["feed.xml"] + Self.refusedFeeds.keys + Self.inertFeeds.keys).map { "/" + $0 })
        // Besides the feeds, only the size checks of the inert feeds' own
        // enclosure, which gives no length: its first byte, nothing else.
        #expect(paths.subtracting(feedPaths).isSubset(of: ["/ep1.mp3"]), "unexpected: \(paths.subtracting(feedPaths))")
        let asked = try fixture.origin.ranges("ep1.mp3")
        #expect(asked.allSatisfy { $0 == "bytes=0-0" }, "only size checks of the enclosure: \(asked)")
        try mounts.unmount()
    }

    @Test func enclosuresThatAreNotPlainHTTPAreNeitherShownNorFetched() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        let data = Harness.bytes(count: 50_000, seed: 7)
        for name in ["ep1.mp3", "bad.mp3", "with space.mp3", "cdn/bad.mp3"] { try fixture.origin.put(name, data) }
        let base = fixture.origin.base
        let hostPort = base.dropFirst("http://".count)
        let items: [(title: String, url: String)] = [
            ("Good", "\(base)/ep1.mp3"),
            ("File", "file:///etc/passwd"),
            ("Ftp", "ftp://\(hostPort)/bad.mp3"),
            ("Gopher", "gopher://\(hostPort)/_GET%20/bad.mp3%20HTTP/1.0%0D%0A%0D%0A"),
            ("Dict", "dict://\(hostPort)/bad.mp3"),
            ("Data", "data:audio/mpeg;base64,AAAA"),
            ("Javascript", "javascript:fetch('\(base)/bad.mp3')"),
            ("Relative scheme", "//\(hostPort)\\bad.mp3"),
            ("Backslash", "\(base)/cdn\\bad.mp3"),
            ("Backslash host", "http://\(hostPort)\\@example.org/bad.mp3"),
            ("Space in host", "http://127.0.0 .1:\(fixture.origin.port)/bad.mp3"),
            ("Delete", "\(base)/bad\u{7F}.mp3"),
            ("C1 control", "\(base)/bad\u{85}.mp3"),
            // A space in the path is sent percent-encoded, as browsers and
            // podcast apps do: no raw space ever reaches the request line.
            ("Space in path", "\(base)/with space.mp3"),
        ]
        try fixture.origin.put("feed.xml", SafetyMount.feed(title: "Enclosures", items: items))
        try mounts.mountOrThrow(["\(base)/feed.xml"], waitFor: .paths(["Enclosures/Good.mp3"]))
        // Episodes only (the show's playlist lists exactly these).
        let listing = SafetyMount.listing(fixture.mountpoint + "/Enclosures").filter { !$0.hasSuffix(".m3u") }
        #expect(listing == ["Good.mp3", "Space in path.mp3"], "\(listing)")
        // Both readable: the origin's bytes, fetched over http.
        for name in listing {
            let copy = fixture.directory + "/copy"
            try Harness.sh("cat '\(fixture.mountpoint)/Enclosures/\(name)' > '\(copy)'")
            #expect(FileManager.default.contents(atPath: copy) == data, "\(name)")
        }
        let paths = Set((try fixture.origin.stats()["paths"] as? [String: Any] ?? [:]).keys)
        #expect(paths == ["/feed.xml", "/ep1.mp3", "/with space.mp3"], "\(paths)")
        try mounts.unmount()
    }

    @Test func redirectsToOtherSchemesOrRawCharactersGiveEIOAndFetchNothingElse() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        let base = fixture.origin.base
        let hostPort = base.dropFirst("http://".count)
        let targets: [(title: String, location: String, reason: String)] = [
            ("File", "file:///etc/passwd", "file:"),
            ("Ftp", "ftp://\(hostPort)/cdn/ftp.mp3", "ftp:"),
            ("Gopher", "gopher://\(hostPort)/_GET%20/cdn/gopher.mp3", "gopher:"),
            ("Space", "\(base)/cdn/a b.mp3", "raw space"),
            ("Backslash", "\(base)/cdn\\back.mp3", "backslash"),
            ("Backslash host", "http://\(hostPort)\\@example.org/cdn/host.mp3", "backslash"),
        ]
        let data = Harness.bytes(count: 40_000, seed: 9)
        try fixture.origin.put("good.mp3", data)
        for file in ["cdn/ftp.mp3", "cdn/gopher.mp3", "cdn/a b.mp3", "cdn/back.mp3", "cdn/host.mp3"] {
            try fixture.origin.put(file, data)
        }
        var redirects: [String: String] = [:]
        for (index, target) in targets.enumerated() {
            try fixture.origin.put("r\(index).mp3", data)
            redirects["/r\(index).mp3"] = target.location
        }
        let items = [(title: "Good", url: "\(base)/good.mp3")]
            + targets.enumerated().map { (title: $0.element.title, url: "\(base)/r\($0.offset).mp3") }
        try fixture.origin.put("feed.xml", SafetyMount.feed(title: "Redirects", items: items))
        let json = try JSONSerialization.data(withJSONObject: ["redirects": redirects])
        try fixture.origin.configure(String(decoding: json, as: UTF8.self))
        try mounts.mountOrThrow(["\(base)/feed.xml"], waitFor: .paths(["Redirects/Good.mp3"]))

        let stats = try Self.expectRefused(
            targets.map { ($0.title, $0.reason) }, folder: fixture.mountpoint + "/Redirects", good: data,
            fixture: fixture)
        #expect(Set(stats.keys) == Set(["/feed.xml", "/good.mp3"] + targets.indices.map { "/r\($0).mp3" }))
        try mounts.unmount()
    }

    /// libcurl follows the `Location` of any 3xx, not only 301-308: a 300,
    /// 305, 306 or 399 whose `Location` holds a raw space or a backslash
    /// is refused like a 302's.
    @Test func unusualRedirectStatusesMeetTheRedirectRuleToo() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        let base = fixture.origin.base
        let cases: [(title: String, code: Int, location: String, reason: String)] = [
            ("Multiple", 300, "\(base)/cdn/a b.mp3", "raw space"),
            ("Proxy", 305, "\(base)/cdn\\back.mp3", "backslash"),
            ("Unused", 306, "\(base)/cdn/c d.mp3", "raw space"),
            ("Odd", 399, "/cdn\\odd.mp3", "backslash"),
        ]
        let data = Harness.bytes(count: 40_000, seed: 11)
        try fixture.origin.put("good.mp3", data)
        for file in ["cdn/a b.mp3", "cdn/back.mp3", "cdn/c d.mp3", "cdn/odd.mp3", "cdn\\back.mp3", "cdn\\odd.mp3"] {
            try fixture.origin.put(file, data)
        }
        var statuses: [String: Any] = [:]
        for (index, target) in cases.enumerated() {
            try fixture.origin.put("s\(index).mp3", data)
            statuses["/s\(index).mp3"] = ["code": target.code, "location": target.location]
        }
        let items = [(title: "Good", url: "\(base)/good.mp3")]
            + cases.enumerated().map { (title: $0.element.title, url: "\(base)/s\($0.offset).mp3") }
        try fixture.origin.put("feed.xml", SafetyMount.feed(title: "Statuses", items: items))
        let json = try JSONSerialization.data(withJSONObject: ["status": statuses])
        try fixture.origin.configure(String(decoding: json, as: UTF8.self))
        try mounts.mountOrThrow(["\(base)/feed.xml"], waitFor: .paths(["Statuses/Good.mp3"]))

        let stats = try Self.expectRefused(
            cases.map { ($0.title, $0.reason) }, folder: fixture.mountpoint + "/Statuses", good: data,
            fixture: fixture)
        // The origin did answer each odd status: the fault happened.
        for index in cases.indices {
            let path = stats["/s\(index).mp3"] as? [String: Any]
            let seen = (path?["statuses"] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.intValue }
            #expect(seen.contains(cases[index].code), "/s\(index).mp3 answered \(seen)")
        }
        try mounts.unmount()
    }

    @Test func feedsOverTheSizeLimitAreRefusedWithoutBeingHeld() throws {
        let fixture = try Fixture()
        let mounts = SafetyMount(fixture)
        defer {
            mounts.cleanup()
            fixture.cleanup()
        }
        try fixture.publish(Fixture.episodes(sizes: [10_000]))
        // 100 MiB of zeros (sparse on the origin's disk); not a template.
        let huge = fixture.origin.root + "/huge-feed"
        try Harness.sh("truncate -s 100M '\(huge)'")
        let base = fixture.origin.base

        // Alone, with the default limit: the mount fails and says why.
        // Nothing to wait for: this mount is meant to fail.
        let alone = try mounts.mount(["\(base)/huge-feed"], waitFor: .none)
        #expect(alone.status != 0)
        #expect(alone.stderr.contains("larger than the limit of 64 MiB"), "\(alone.stderr)")
        #expect(alone.stderr.contains("--max-feed-size"), "\(alone.stderr)")

        // The daemon's memory with the ordinary feed alone, for comparison
        // (a sanitizer build starts far higher than a plain one).
        try mounts.mountOrThrow(["\(base)/feed.xml"], extra: ["--max-feed-size", "4M"])
        let baselinePID = try #require(mounts.daemonPID)
        let baseline = try #require(SafetyMount.memory(of: baselinePID))
        try mounts.unmount()

        // With no Content-Length the body streams until the limit; the
        // transfer stops there, and the daemon never holds the 100 MiB.
        try fixture.origin.configure(#"{"no_length": ["/huge-feed"]}"#)
        let output = try mounts.mount(["\(base)/huge-feed", "\(base)/feed.xml"], extra: ["--max-feed-size", "4M"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.contains("larger than the limit of 4 MiB"), "\(output.stderr)")
        #expect(SafetyMount.listing(fixture.mountpoint) == ["Latest.m3u", Fixture.showTitle])
        let daemon = try #require(mounts.daemonPID)
        let memory = try #require(SafetyMount.memory(of: daemon))
        print("daemon memory after refusing a 100 MiB feed with --max-feed-size 4M (KiB): peak \(memory.peak), "
            + "now \(memory.now); with the ordinary feed alone: peak \(baseline.peak)")
        #expect(memory.peak - baseline.peak < 32 * 1024, "peak grew by \(memory.peak - baseline.peak) KiB")
        try mounts.unmount()

        // A gzip bomb: 100 KiB on the wire, 100 MiB decoded. The limit
        // counts decoded bytes, so it stops the same way.
        try Harness.sh("head -c 100M /dev/zero | gzip -9 > '\(fixture.origin.root)/bomb-feed'")
        try fixture.origin.configure(#"{"gzip_encoded": ["/bomb-feed"]}"#)
        let bomb = try mounts.mount(["\(base)/bomb-feed", "\(base)/feed.xml"], extra: ["--max-feed-size", "4M"])
        #expect(bomb.status == 0, "\(bomb.stderr)")
        #expect(bomb.stderr.contains("larger than the limit of 4 MiB"), "\(bomb.stderr)")
        let bombDaemon = try #require(mounts.daemonPID)
        let bombMemory = try #require(SafetyMount.memory(of: bombDaemon))
        print("daemon memory after refusing a gzip bomb (100 MiB decoded) with --max-feed-size 4M (KiB): "
            + "peak \(bombMemory.peak), now \(bombMemory.now)")
        #expect(bombMemory.peak - baseline.peak < 32 * 1024, "peak grew by \(bombMemory.peak - baseline.peak) KiB")
        try mounts.unmount()

        // The option form, and a limit the feed fits in.
        try mounts.mountOrThrow(["\(base)/feed.xml"], extra: ["-o", "max_feed_size=1K"])
        #expect(SafetyMount.listing(fixture.mountpoint) == ["Latest.m3u", Fixture.showTitle])
        try mounts.unmount()
        let bad = try Harness.run(Harness.podfs, ["mount", "-o", "max_feed_size=lots", "\(base)/feed.xml", fixture.mountpoint])
        #expect(bad.status != 0 && bad.stderr.contains("max_feed_size needs a size"), "\(bad.stderr)")
    }
}
