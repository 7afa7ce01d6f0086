import Testing

@testable import RangeCache

/// An enclosure URL whose path changed is a new episode's bytes; one whose
/// host, query or fragment changed (a CDN, a tracking parameter, a signed
/// link's expiry) keeps the cached bytes.
@Suite struct EnclosurePathTests {
    private func path(_ url: String) -> String {
        String(decoding: CacheIndex.enclosurePath(url), as: UTF8.self)
    }

    @Test func thePathIsWhatIsLeftWithoutSchemeHostQueryAndFragment() {
        #expect(path("https://cdn.example.org/show/41.mp3?token=abc#t=10") == "/show/41.mp3")
        #expect(path("http://127.0.0.1:8080/e.mp3") == "/e.mp3")
        #expect(path("https://example.org?x=1") == "")
        #expect(path("https://example.org#top") == "")
        #expect(path("https://example.org") == "")
        #expect(path("/relative/e.mp3?x") == "/relative/e.mp3")
        #expect(path("https://h.example/épisode/1.mp3?é") == "/épisode/1.mp3")
    }

    @Test func aChangeOfHostQueryOrFragmentKeepsThePath() {
        #expect(!CacheIndex.pathsDiffer("https://a.example/e.mp3?t=1", "https://b.example/e.mp3?t=2#x"))
        #expect(CacheIndex.pathsDiffer("https://a.example/e.mp3", "https://a.example/e2.mp3"))
        #expect(CacheIndex.pathsDiffer("https://a.example/e.mp3", "https://a.example/E.mp3"))
    }

    /// The rule as it was first written, by characters: the bytes version
    /// must agree with it on every ASCII URL.
    private func pathByCharacters(_ url: String) -> String {
        var rest = Substring(url)
        let scheme = Array(rest.utf8)
        if let colon = scheme.firstIndex(of: UInt8(ascii: ":")), scheme[colon...].starts(with: Array("://".utf8)) {
            rest = rest.dropFirst(colon + 3)
            rest = rest[(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)...]
        }
        return String(rest.prefix { $0 != "?" && $0 != "#" })
    }

    @Test func agreesWithTheRuleByCharactersOnRandomURLs() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["https", "http", ":", "//", "/", "?", "#", "a", "b.c", "%20", "=", "&", ":80", "x"]
        for _ in 0..<20_000 {
            let url = (0..<Int.random(in: 0...10, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }.joined()
            #expect(path(url) == pathByCharacters(url), "\(url)")
        }
    }
}
