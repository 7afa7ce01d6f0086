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
