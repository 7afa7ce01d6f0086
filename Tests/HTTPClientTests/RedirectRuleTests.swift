import HTTPClient
import Testing

/// Which `Location` values a redirect may carry before libcurl follows it.
@Suite struct RedirectRuleTests {
    @Test(arguments: [
        "http://cdn.example/a.mp3", "https://cdn.example/a.mp3", "HTTPS://cdn.example/a.mp3", "/cdn/a.mp3",
        "a.mp3", "//cdn.example/a.mp3", "?x=1", "http://cdn.example/a%20b.mp3", "http://cdn.example/ä.mp3",
        "https://cdn.example/a.mp3 \t",
    ])
    func followsHTTPLocations(_ location: String) {
        #expect(RedirectRule.problem(location: location) == nil, "\(location)")
    }

    @Test(arguments: [
        ("file:///etc/passwd", "file:"), ("ftp://127.0.0.1/a.mp3", "ftp:"), ("gopher://127.0.0.1:70/_x", "gopher:"),
        ("dict://127.0.0.1:11211/stat", "dict:"), ("FILE:///etc/passwd", "file:"), ("data:text/plain,x", "data:"),
        ("http://cdn.example/a b.mp3", "space"), ("http://cdn.example\\@127.0.0.1/", "backslash"),
        ("/cdn\\a.mp3", "backslash"), ("http://cdn.example/a\u{1}.mp3", "control"), ("http://x/\u{7F}", "control"),
        ("", "empty"),
    ])
    func refusesOtherSchemesAndRawCharacters(_ location: String, _ reason: String) {
        let problem = RedirectRule.problem(location: location)
        #expect(problem?.contains(reason) == true, "\(location): \(problem ?? "followed")")
    }
}

/// Which responses the redirect rule looks at: every one whose `Location`
/// libcurl would follow, which is any 3xx.
@Suite struct RedirectStatusTests {
    @Test(arguments: [300, 301, 302, 303, 304, 305, 306, 307, 308, 399])
    func everyThreeHundredIsChecked(_ status: Int) {
        #expect(RedirectRule.isFollowed(status: status))
    }

    @Test(arguments: [100, 200, 206, 299, 400, 404, 416, 503, 0, 3000])
    func otherStatusesAreNotRedirects(_ status: Int) {
        #expect(!RedirectRule.isFollowed(status: status))
    }

    @Test func anUnreadableStatusLineIsChecked() {
        #expect(RedirectRule.isFollowed(status: HTTPResponseHead.status(ofStatusLine: "HTTP/1.1 +30 Moved")))
        #expect(RedirectRule.isFollowed(status: nil))
    }

    @Test(arguments: [
        ("HTTP/1.1 302 Found", 302), ("HTTP/2 399", 399), ("HTTP/1.0 300 Multiple Choices", 300),
        ("HTTP/1.1 206 Partial Content", 206),
    ])
    func statusLinesAreRead(_ line: String, _ expected: Int) {
        #expect(HTTPResponseHead.status(ofStatusLine: line) == expected, "\(line)")
    }

    @Test(arguments: [
        "HTTP/1.1 +302 Found", "HTTP/1.1 3020 Found", "HTTP/1.1 30 Found", "HTTP/1.1  302", "HTTP/1.1 0x1 x",
        "HTTP/1.1 -30", "HTTP/1.1", "ICY 200 OK", "HTTP/1.1 3e2",
    ])
    func oddStatusLinesAreUnread(_ line: String) {
        #expect(HTTPResponseHead.status(ofStatusLine: line) == nil, "\(line)")
    }
}
