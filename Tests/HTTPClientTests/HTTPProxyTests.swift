import HTTPClient
import Testing

/// `-o proxy=URL`: which URLs are proxies, and what the log may show.
@Suite struct HTTPProxyTests {
    @Test func theLogShowsNoCredentials() throws {
        let proxy = try #require(HTTPProxy("http://user:secret@proxy.example:3128/"))
        #expect(proxy.shown == "http://proxy.example:3128")
        #expect(!proxy.shown.contains("secret"))
        #expect(proxy.url == "http://user:secret@proxy.example:3128/")
    }

    @Test func theZoneRuleSeesTheProxysAddress() throws {
        let policy = AddressPolicy()
        #expect(try #require(HTTPProxy("http://127.0.0.1:1")).whatTheZoneRuleSees(under: policy)
            == "127.0.0.1, a loopback address")
        #expect(try #require(HTTPProxy("socks5h://[fd00::1]:1080")).whatTheZoneRuleSees(under: policy)
            == "fd00::1, a private address")
        #expect(try #require(HTTPProxy("https://proxy.example")).whatTheZoneRuleSees(under: policy)
            == "the addresses proxy.example resolves to")
    }

    @Test(arguments: [
        "", "proxy.example:3128", "ftp://proxy.example", "file:///tmp/x", "http://", "http://a@b@c/", "http://p .example",
        "http://p.example\n", " http://p.example",
    ])
    func otherTextIsNoProxy(_ text: String) {
        #expect(HTTPProxy(text) == nil, "\(text)")
    }
}
