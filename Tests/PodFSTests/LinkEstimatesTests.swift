@testable import ReadRules
import Testing

/// Each origin host's round trip and rate, apart from the others'.
struct LinkEstimatesTests {
    private let bounds: ClosedRange<Int64> = 256 * 1024...64 * 1024 * 1024

    @Test(arguments: [
        ("https://cdn.example.org/show/ep1.mp3", "cdn.example.org"),
        ("https://CDN.Example.ORG:8443/a.mp3?x=1", "cdn.example.org:8443"),
        ("http://user:pa@ss@host.example/a.mp3", "host.example"),
        ("http://127.0.0.1:8080", "127.0.0.1:8080"),
        ("https://[2001:DB8::1]:443/x#frag", "[2001:db8::1]:443"),
        ("https://host.example?q=/x", "host.example"),
        ("https://dts.podtrac.com/redirect.mp3/cdn.example.org/a.mp3", "dts.podtrac.com"),
        ("not a url", "not a url"),
    ])
    func aHostIsTheURLsAuthorityWithoutUserInfoInLowerCase(url: String, host: String) {
        #expect(LinkEstimates.host(of: url) == host)
        #expect(LinkEstimates.Host(url: url) == LinkEstimates.Host(name: host), "the key made without the name")
    }

    /// The bug this fixes: a slow host's bodies pulled a fast host's
    /// read-ahead down to the slow one's rate, and the fast one's windows
    /// went to the slow one.
    @Test func aSlowHostLeavesAFastHostsReadAheadAlone() {
        var links = LinkEstimates()
        links.observe(latency: 0.03, host: "fast.example")
        links.observe(bytes: 64 << 20, in: 0.06, host: "fast.example")  // ~1.1 GB/s
        let fast = links["fast.example"].readAhead(within: bounds)
        for _ in 0..<8 {
            links.observe(latency: 0.05, host: "slow.example")
            links.observe(bytes: 4 << 20, in: 2, host: "slow.example")  // ~2 MB/s
        }
        #expect(links["fast.example"].readAhead(within: bounds) == fast)
        #expect(fast == bounds.upperBound, "a far, fast host keeps its largest windows")
        let slow = links["slow.example"].readAhead(within: bounds) ?? 0
        #expect(slow < 1 << 20, "the slow host's own: twice 2 MB/s x 50 ms, \(slow)")
        #expect(links["new.example"].latency == nil && links["new.example"].throughput == nil, "never seen")
    }

    @Test func theHostObservedLongestAgoIsForgottenFirst() {
        var links = LinkEstimates(capacity: 3)
        for host: LinkEstimates.Host in ["a", "b", "c"] { links.observe(latency: 0.01, host: host) }
        links.observe(latency: 0.02, host: "a")  // a is now the most recent
        links.observe(latency: 0.03, host: "d")  // b goes
        #expect(links.count == 3)
        #expect(links["b"].latency == nil)
        #expect(links["a"].latency != nil && links["c"].latency != nil && links["d"].latency == 0.03)
    }

    /// Most shows' enclosures go through a tracking prefix to CDNs that
    /// differ from show to show: the prefix's estimate mixed them all.
    @Test func showsBehindOneTrackingPrefixAreSizedByTheirOwnCDNs() throws {
        var links = LinkEstimates()
        let prefix: LinkEstimates.Host = "dts.podtrac.com"
        let (far, slow): (LinkEstimates.Host, LinkEstimates.Host) = ("far.cdn.example", "slow.cdn.example")
        // Each show's probe goes through the prefix's redirect, then its
        // requests go straight to its pinned link.
        links.observe(latency: 0.06, feed: prefix, answered: far, direct: false)
        links.observe(bytes: 256 << 10, in: 0.0002, feed: prefix, answered: far)
        links.observe(latency: 0.03, feed: prefix, answered: far, direct: true)
        links.observe(bytes: 64 << 20, in: 0.06, feed: prefix, answered: far)  // ~1.1 GB/s
        let fast = links.estimate(feed: prefix, pinned: far).readAhead(within: bounds)
        for _ in 0..<8 {
            links.observe(latency: 0.002, feed: prefix, answered: slow, direct: true)
            links.observe(bytes: 4 << 20, in: 2, feed: prefix, answered: slow)  // ~2 MB/s
        }
        #expect(links.estimate(feed: prefix, pinned: far).readAhead(within: bounds) == fast)
        #expect(fast == bounds.upperBound, "the far, fast CDN keeps its largest windows")
        let mixed = try #require(links.estimate(feed: prefix, pinned: nil).readAhead(within: bounds))
        #expect(mixed < bounds.upperBound, "the prefix's estimate is the mix, which sized them both before")
        #expect(links.estimate(feed: prefix, pinned: slow).latency == 0.002)
    }

    @Test func aRedirectsRoundTripsAreNotTheAnsweringHostsOwn() {
        var links = LinkEstimates()
        links.observe(latency: 0.08, feed: "prefix.example", answered: "cdn.example", direct: false)
        #expect(links[feed: "prefix.example"].latency == 0.08, "what a first request through the prefix meets")
        #expect(links["cdn.example"].latency == nil, "the redirects' round trips are not the CDN's")
        links.observe(bytes: 1 << 20, in: 0.01, feed: "prefix.example", answered: "cdn.example")
        #expect(links["cdn.example"].throughput != nil, "a body is the answering host's own")
        let lent = links.estimate(feed: "prefix.example", pinned: "cdn.example")
        #expect(lent.latency == 0.08 && lent.throughput == links[feed: "prefix.example"].throughput,
                "no round trip of its own yet: the feed host's")
        links.observe(latency: 0.02, feed: "prefix.example", answered: "cdn.example", direct: true)
        #expect(links.estimate(feed: "prefix.example", pinned: "cdn.example").latency == 0.02)
        #expect(links[feed: "prefix.example"].latency == 0.05, "the feed host learns every response of its shows")
        // A redirect that stays on one host (http to https, a fresh signed
        // link) is more than one round trip to it.
        links.observe(latency: 0.5, feed: "same.example", answered: "same.example", direct: false)
        #expect(links["same.example"].latency == nil)
    }

    /// A host that serves some of its shows' episodes itself and sends
    /// others to a CDN: its own estimate is its own responses only.
    @Test func aHostsOwnResponsesStayApartFromItsShowsElsewhere() {
        var links = LinkEstimates()
        let host: LinkEstimates.Host = "host.example"
        links.observe(latency: 0.002, feed: host, answered: host, direct: true)
        links.observe(bytes: 8 << 20, in: 0.08, feed: host, answered: host)  // ~100 MB/s
        for _ in 0..<4 {
            links.observe(latency: 0.3, feed: host, answered: "far.cdn.example", direct: true)
            links.observe(bytes: 1 << 20, in: 1, feed: host, answered: "far.cdn.example")
        }
        let own = links.estimate(feed: host, pinned: host)
        #expect(own.latency == 0.002 && own.throughput == Double(8 << 20) / 0.08, "the episodes it serves itself")
        #expect((links[feed: host].latency ?? 0) > 0.2, "as a feed host it met the far CDN's round trips")
    }

    /// A link pinned on an earlier mount whose only request so far was a
    /// 1-byte check: its own round trip, far, and no rate. Another CDN's
    /// fast rate beside it would make it far and fast, with 64 MiB windows
    /// on what may be a slow line.
    @Test func aPinnedHostsRoundTripIsNeverPairedWithAnotherCDNsRate() {
        var links = LinkEstimates()
        links.observe(latency: 0.05, feed: "prefix.example", answered: "fast.cdn.example", direct: false)
        links.observe(bytes: 64 << 20, in: 0.06, feed: "prefix.example", answered: "fast.cdn.example")
        links.observe(latency: 0.06, feed: "prefix.example", answered: "cdn.example", direct: true)
        let estimate = links.estimate(feed: "prefix.example", pinned: "cdn.example")
        #expect(estimate.latency == 0.06 && estimate.throughput == nil, "its own round trip, no rate yet")
        #expect(!ReadPlan.isFarAndFast(link: estimate, tuning: ReadTuning()))
        #expect(ReadPlan.isFarAndFast(link: links[feed: "prefix.example"], tuning: ReadTuning()),
                "the feed host's mix would have said far and fast")
        #expect(links.estimate(feed: "prefix.example", pinned: "never.example").latency == 0.055,
                "a host never measured: the feed host's")
    }
}
