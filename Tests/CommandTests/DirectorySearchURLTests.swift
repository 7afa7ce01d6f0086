import Testing

@testable import podfs

/// The URL `podfs search` asks: the directory's `/search` endpoint with
/// the words percent-encoded, whatever they hold.
@Suite struct DirectorySearchURLTests {
    // MARK: - Helpers

    private static func url(_ terms: [String], directory: String = "https://itunes.apple.com", limit: Int = 20)
        throws -> String
    {
        try #require(DirectorySearch(directory: directory, terms: terms, limit: limit)).url
    }

    // MARK: - Terms

    @Test func wordsAreJoinedBySpacesSentAsPlus() throws {
        #expect(
            try Self.url(["history", "of", "rome"])
                == "https://itunes.apple.com/search?media=podcast&entity=podcast&term=history+of+rome&limit=20")
    }

    @Test func charactersWithAMeaningInAQueryAreEncoded() throws {
        let url = try Self.url(["rock & roll", "a+b=c?", "50%", "#1", "x/y;z", "\"quoted\"", "it's"], limit: 5)
        #expect(
            url == "https://itunes.apple.com/search?media=podcast&entity=podcast"
                + "&term=rock+%26+roll+a%2Bb%3Dc%3F+50%25+%231+x%2Fy%3Bz+%22quoted%22+it%27s&limit=5")
    }

    @Test func unicodeIsSentAsUTF8() throws {
        #expect(try Self.url(["café", "日本", "🎧"]).contains("&term=caf%C3%A9+%E6%97%A5%E6%9C%AC+%F0%9F%8E%A7&"))
        // Composed and decomposed é are different bytes; each is sent as typed.
        #expect(try Self.url(["cafe\u{301}"]).contains("&term=cafe%CC%81&"))
    }

    @Test func controlCharactersAndLineBreaksAreEncodedNotSent() throws {
        let url = try Self.url(["a\nb\tc\r\u{0}d\u{7F}"])
        #expect(url.contains("&term=a%0Ab%09c%0D%00d%7F&"))
        #expect(url.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F })
    }

    @Test func unreservedCharactersStayAsTheyAre() throws {
        #expect(try Self.url(["A-z_0.9~"]).contains("&term=A-z_0.9~&"))
    }

    @Test func theLimitIsSentAsGiven() throws {
        #expect(try Self.url(["x"], limit: 1).hasSuffix("&limit=1"))
        #expect(try Self.url(["x"], limit: 200).hasSuffix("&limit=200"))
    }

    // MARK: - Directory

    @Test func searchIsAddedToTheDirectoryUnlessItEndsInIt() {
        let endpoints: [(String, String)] = [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/search"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/search"),
            ("http://127.0.0.1:8080/search", "http://127.0.0.1:8080/search"),
            ("http://127.0.0.1:8080/search/", "http://127.0.0.1:8080/search"),
            ("http://127.0.0.1:8080/api/v1", "http://127.0.0.1:8080/api/v1/search"),
            ("http://127.0.0.1:8080/research", "http://127.0.0.1:8080/research/search"),
            ("http://search", "http://search/search"),
            ("https://[::1]:9/", "https://[::1]:9/search"),
            ("https://itunes.apple.com/search?country=de", "https://itunes.apple.com/search?country=de"),
            ("https://itunes.apple.com/?country=de#top", "https://itunes.apple.com/search?country=de"),
            ("https://itunes.apple.com?", "https://itunes.apple.com/search"),
        ]
        for (directory, endpoint) in endpoints {
            #expect(DirectorySearch.endpoint(directory: directory) == endpoint, "\(directory)")
        }
    }

    @Test func aDirectoryQueryIsKeptBeforeTheSearchParameters() throws {
        #expect(
            try Self.url(["x"], directory: "https://itunes.apple.com/search?country=de")
                == "https://itunes.apple.com/search?country=de&media=podcast&entity=podcast&term=x&limit=20")
    }

    @Test func aDirectoryThatIsNoHTTPURLIsRefused() {
        for directory in ["", "itunes.apple.com", "ftp://itunes.apple.com", "file:///tmp/search", "http://", "/search",
            "http://exa mple.org", "javascript:alert(1)"]
        {
            #expect(DirectorySearch(directory: directory, terms: ["x"], limit: 20) == nil, "\(directory)")
        }
    }
}
