import Feeds
import Testing

/// What of a URL is shown and logged: never a password, a query value or a
/// fragment, always what says which feed it is.
@Suite struct FeedURLRedactionTests {
    @Test func passwordInUserinfoIsReplaced() {
        #expect(FeedURL.redacted("https://user:secret@host.example/feed.xml") == "https://user:***@host.example/feed.xml")
        #expect(
            FeedURL.redacted("https://user:secret@host.example/feed.xml", for: .log)
                == "https://user:***@host.example/feed.xml")
    }

    @Test func userNameWithoutPasswordIsHiddenAsIfItWereAToken() {
        #expect(FeedURL.redacted("https://abcdef0123@host.example/feed") == "https://***@host.example/feed")
        #expect(FeedURL.redacted("https://@host.example/feed") == "https://@host.example/feed")
    }

    @Test func passwordWithRawAtSignIsHiddenWhole() {
        #expect(FeedURL.redacted("https://user:se@cr@et@host.example/f") == "https://user:***@host.example/f")
        #expect(FeedURL.redacted("https://user:p%40ss@host.example/f") == "https://user:***@host.example/f")
    }

    @Test func passwordWithRawSlashQuestionMarkOrHashLeaksNothing() {
        for url in [
            "https://user:sec/ret@host.example/feed", "https://user:sec?ret@host.example/feed",
            "https://user:sec#ret@host.example/feed",
        ] {
            for audience in [FeedURL.Audience.display, .log] {
                let shown = FeedURL.redacted(url, for: audience)
                #expect(!shown.contains("sec") && !shown.contains("ret"), "\(url) -> \(shown)")
            }
        }
        #expect(FeedURL.redacted("https://user:sec/ret@host.example/feed") == "https://user:***@host.example/feed")
    }

    @Test func ipv6HostsAndPortsStay() {
        #expect(FeedURL.redacted("http://[::1]:8080/feed") == "http://[::1]:8080/feed")
        #expect(FeedURL.redacted("http://u:pw@[fe80::1%25eth0]/feed") == "http://u:***@[fe80::1%25eth0]/feed")
        #expect(FeedURL.redacted("http://u:pw@[2001:db8::1]:443/f?k=v", for: .log) == "http://u:***@[2001:db8::1]:443/f")
        #expect(FeedURL.redacted("http://host.example:8080/feed") == "http://host.example:8080/feed")
    }

    @Test func queryValuesAreHiddenForDisplayAndTheQueryDroppedForLogs() {
        let url = "https://host.example/feed.rss?id=7&token=secret&flag#part"
        #expect(FeedURL.redacted(url) == "https://host.example/feed.rss?id=***&token=***&***")
        #expect(FeedURL.redacted(url, for: .log) == "https://host.example/feed.rss")
        #expect(FeedURL.redacted("https://host.example/feed?") == "https://host.example/feed")
    }

    @Test func fragmentIsDropped() {
        #expect(FeedURL.redacted("https://host.example/feed#access=secret") == "https://host.example/feed")
        #expect(FeedURL.redacted("https://host.example/feed#access=secret", for: .log) == "https://host.example/feed")
    }

    @Test func plainURLsAreUnchanged() {
        for url in ["https://host.example/feed.xml", "http://127.0.0.1:8000/a/b.mp3", "https://medium.com/@user/feed"] {
            #expect(FeedURL.redacted(url) == url)
            #expect(FeedURL.redacted(url, for: .log) == url)
        }
    }

    @Test func textWithoutSchemeIsReadAsStartingWithTheAuthority() {
        #expect(FeedURL.redacted("user:secret@host.example/feed?token=x") == "user:***@host.example/feed?token=***")
        #expect(FeedURL.redacted("//user:secret@host.example/feed") == "//user:***@host.example/feed")
        #expect(FeedURL.redacted("feeds/list.opml") == "feeds/list.opml")
    }

    @Test func garbageGivesAResultWithoutItsSecret() {
        for text in ["", ":", "@", "://", "?", "#", "a:b:c@", "[", "[::1", "http://[::1]x:y@z?q", "\u{0}:secret@"] {
            let shown = FeedURL.redacted(text, for: .log)
            #expect(!shown.contains("secret") && !shown.contains("q"), "\(text.debugDescription) -> \(shown)")
            _ = FeedURL.redacted(text)
        }
        #expect(FeedURL.redacted("host:notaport/path") == "host:***/path")
    }
}
