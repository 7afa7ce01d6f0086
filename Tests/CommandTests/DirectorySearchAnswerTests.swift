import Foundation
import Testing

@testable import podfs

/// `DirectorySearch.results(from:)` reads the only JSON podfs takes from
/// the network: a good answer gives its matches, a hostile one gives the
/// matches that are usable, or a clear error, and never a trap.
@Suite struct DirectorySearchAnswerTests {
    // MARK: - Helpers

    private static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    private static func answer(_ results: String) -> [UInt8] {
        bytes(#"{"resultCount": 1, "results": ["# + results + "]}")
    }

    private static func entry(_ fields: String) -> String {
        #"{"wrapperType": "track", "kind": "podcast", "#  + fields + "}"
    }

    // MARK: - Good answers

    @Test func aGoodAnswerGivesTitleAuthorCountAndFeedInOrder() throws {
        let json = """
            {"resultCount": 2, "results": [
              {"wrapperType": "track", "kind": "podcast", "collectionId": 1200361736,
               "trackName": "The Daily", "collectionName": "The Daily", "artistName": "The New York Times",
               "feedUrl": "https://feeds.simplecast.com/54nAGcIl", "trackCount": 2345,
               "artworkUrl600": "https://is1-ssl.mzstatic.com/x.jpg", "genres": ["Daily News", "Podcasts"]},
              {"wrapperType": "track", "kind": "podcast", "collectionName": "Café Società",
               "artistName": "Radio Ünïcode", "feedUrl": "http://example.org/feed.xml", "trackCount": 1}
            ]}
            """
        let matches = try DirectorySearch.results(from: Self.bytes(json))
        #expect(matches == [
            DirectoryMatch(
                title: "The Daily", author: "The New York Times", episodeCount: 2345,
                feedURL: "https://feeds.simplecast.com/54nAGcIl"),
            DirectoryMatch(
                title: "Café Società", author: "Radio Ünïcode", episodeCount: 1, feedURL: "http://example.org/feed.xml"),
        ])
        #expect(matches[0].text == "The Daily (The New York Times, 2345 episodes)\n  https://feeds.simplecast.com/54nAGcIl\n")
        #expect(matches[1].text == "Café Società (Radio Ünïcode, 1 episode)\n  http://example.org/feed.xml\n")
    }

    @Test func anAnswerWithNoResultsIsAnEmptyList() throws {
        #expect(try DirectorySearch.results(from: Self.bytes(#"{"resultCount": 0, "results": []}"#)).isEmpty)
    }

    @Test func theTrackNameStandsInForAMissingCollectionName() throws {
        let matches = try DirectorySearch.results(
            from: Self.answer(Self.entry(#""trackName": "Only Track", "feedUrl": "https://a.example/f""#)))
        #expect(matches.map(\.title) == ["Only Track"])
    }

    // MARK: - Feed URLs

    @Test func aMatchWithoutAUsableFeedURLIsDropped() throws {
        let entries = [
            #""collectionName": "no feed""#,
            #""collectionName": "null feed", "feedUrl": null"#,
            #""collectionName": "number feed", "feedUrl": 42"#,
            #""collectionName": "array feed", "feedUrl": ["https://a.example/f"]"#,
            #""collectionName": "object feed", "feedUrl": {"url": "https://a.example/f"}"#,
            #""collectionName": "empty feed", "feedUrl": """#,
            #""collectionName": "ftp feed", "feedUrl": "ftp://a.example/f""#,
            #""collectionName": "file feed", "feedUrl": "file:///etc/passwd""#,
            #""collectionName": "script feed", "feedUrl": "javascript:alert(1)""#,
            #""collectionName": "relative feed", "feedUrl": "/feed.xml""#,
            #""collectionName": "bare feed", "feedUrl": "feed.xml""#,
            #""collectionName": "hostless feed", "feedUrl": "https:///feed""#,
            #""collectionName": "control feed", "feedUrl": "https://a.example/f\u001b[2J""#,
            #""collectionName": "kept", "feedUrl": " HTTPS://a.example/kept ""#,
        ]
        let matches = try DirectorySearch.results(from: Self.answer(entries.map(Self.entry).joined(separator: ",")))
        #expect(matches.map(\.title) == ["kept"])
        #expect(matches.first?.feedURL.hasSuffix("://a.example/kept") == true)
    }

    @Test func aFeedURLWithSpacesOrUnicodeIsPercentEncoded() throws {
        let matches = try DirectorySearch.results(
            from: Self.answer(Self.entry(#""feedUrl": "https://a.example/my feed/é.xml""#)))
        #expect(matches.map(\.feedURL) == ["https://a.example/my%20feed/%C3%A9.xml"])
    }

    // MARK: - Hostile fields

    @Test func fieldsOfTheWrongTypeAreLeftOutAndTheMatchKept() throws {
        let entry = Self.entry(
            #""collectionName": 12, "trackName": ["x"], "artistName": {"a": 1}, "trackCount": [3], "#
                + #""feedUrl": "https://a.example/f""#)
        let matches = try DirectorySearch.results(from: Self.answer(entry))
        #expect(matches == [DirectoryMatch(title: nil, author: nil, episodeCount: nil, feedURL: "https://a.example/f")])
        #expect(matches[0].text == "(no title)\n  https://a.example/f\n")
    }

    @Test func countsMayBeStringsOrFractionsAndNonsenseIsNoCount() throws {
        let counts: [(String, Int?)] = [
            ("12", 12), (#""12""#, 12), (#"" 7 ""#, 7), ("12.9", 12), ("1e3", 1000), (#""3.5""#, 3), ("0", 0),
            ("-4", nil), (#""-4""#, nil), ("true", nil), ("false", nil), ("null", nil), (#""many""#, nil),
            (#""nan""#, nil), (#""inf""#, nil), ("1e300", nil), ("99999999999999999999999", nil),
            ("18446744073709551616", nil), ("9223372036854775807", nil), (#""""#, nil),
        ]
        for (json, expected) in counts {
            let entry = Self.entry(#""trackCount": "# + json + #", "feedUrl": "https://a.example/f""#)
            let matches = try DirectorySearch.results(from: Self.answer(entry))
            #expect(matches.map(\.episodeCount) == [expected], "trackCount \(json)")
        }
    }

    @Test func blankTextIsNoText() throws {
        let entry = Self.entry(
            #""collectionName": "  \n ", "trackName": "Real", "artistName": "\t", "feedUrl": "https://a.example/f""#)
        let matches = try DirectorySearch.results(from: Self.answer(entry))
        #expect(matches.map(\.title) == ["Real"])
        #expect(matches.map(\.author) == [nil])
    }

    @Test func theTextShownMovesNoCursorAndReordersNothing() throws {
        let entry = Self.entry(
            #""collectionName": "Evil\u001b[2J\u001b]0;pwned\u0007 Show\u202e", "#
                + #""artistName": "A\u0085B\u200fC\u2028D\u009b31m", "feedUrl": "https://a.example/f""#)
        let match = try #require(try DirectorySearch.results(from: Self.answer(entry)).first)
        #expect(match.text == "Evil[2J]0;pwned Show (ABC D31m)\n  https://a.example/f\n")
        for scalar in match.text.unicodeScalars where scalar != "\n" {
            #expect(scalar.properties.generalCategory != .control, "U+\(String(scalar.value, radix: 16))")
            #expect(!scalar.properties.isBidiControl, "U+\(String(scalar.value, radix: 16))")
        }
    }

    @Test func entriesThatAreNoObjectsAreSkipped() throws {
        let results = #"null, 1, "https://a.example/f", [], [{"feedUrl": "https://a.example/n"}], true, "#
            + Self.entry(#""collectionName": "ok", "feedUrl": "https://a.example/ok""#)
        let matches = try DirectorySearch.results(from: Self.answer(results))
        #expect(matches.map(\.title) == ["ok"])
    }

    @Test func tenThousandResultsAreAllRead() throws {
        let one = Self.entry(#""collectionName": "Show", "trackCount": 3, "feedUrl": "https://a.example/f""#)
        let results = Array(repeating: one, count: 10_000).joined(separator: ",")
        let matches = try DirectorySearch.results(from: Self.answer(results))
        #expect(matches.count == 10_000)
    }

    @Test func extraNestingInsideAMatchIsIgnored() throws {
        let garbage = String(repeating: #"{"a":["#, count: 200) + "1" + String(repeating: "]}", count: 200)
        let entry = Self.entry(#""extra": "# + garbage + #", "feedUrl": "https://a.example/f""#)
        #expect(try DirectorySearch.results(from: Self.answer(entry)).count == 1)
    }

    // MARK: - Answers that are no search result

    @Test func anAnswerThatIsNotJSONIsAClearError() {
        let bodies = [
            "", "<html><body>Service Unavailable</body></html>", "{\"results\": [", "\u{FEFF}", "nul",
            #"{"results": ["\ud800"]}"#,
        ]
        for body in bodies {
            #expect(throws: DirectorySearchError.self, "\(body.debugDescription)") {
                try DirectorySearch.results(from: Self.bytes(body))
            }
            do {
                _ = try DirectorySearch.results(from: Self.bytes(body))
            } catch {
                guard case .notJSON = error else {
                    Issue.record("\(body.debugDescription): \(error)")
                    continue
                }
            }
        }
    }

    @Test func bytesThatAreNotUTF8AreNotJSON() {
        #expect(throws: DirectorySearchError.self) {
            try DirectorySearch.results(from: [0x7B, 0xFF, 0xFE, 0x7D])
        }
    }

    @Test func nestingDeeperThanTheParserAllowsIsNotJSON() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: DirectorySearchError.self) {
            try DirectorySearch.results(from: Self.bytes(#"{"results": "# + deep + "}"))
        }
    }

    @Test func anAnswerWithoutAResultsArrayIsAClearError() throws {
        let bodies = [
            "[]", #"[{"feedUrl": "https://a.example/f"}]"#, "{}", #"{"errorMessage": "Invalid value(s) for key(s)"}"#,
            #"{"results": {"feedUrl": "https://a.example/f"}}"#, #"{"results": null}"#, #"{"results": "none"}"#,
            #"{"Results": []}"#, "42", #""results""#, "null",
        ]
        for body in bodies {
            #expect(throws: DirectorySearchError.noResultsList, "\(body)") {
                try DirectorySearch.results(from: Self.bytes(body))
            }
        }
    }

    // MARK: - Messages

    @Test func everyFailureSaysWhatHappenedAndWhatToDoInOneLine() {
        let directory = "http://127.0.0.1:8080/search"
        let failures: [(DirectorySearchError, String)] = [
            (.status(503), "answered 503 (Service Unavailable); try again later"),
            (.status(404), "answered 404 (Not Found) instead of search results; check that --directory"),
            (.transfer(.unreachable, "Could not connect"), "could not reach the directory"),
            (.transfer(.interrupted, "Timeout was reached"), "did not answer in time or broke off (Timeout was reached)"),
            (.tooLarge(4 << 20), "larger than 4 MiB"),
            (.notJSON("Invalid value"), "did not answer with JSON (Invalid value)"),
            (.noResultsList, #"no "results" list"#),
        ]
        for (failure, expected) in failures {
            let message = failure.message(directory: directory)
            #expect(message.contains(expected), "\(message)")
            #expect(message.contains(directory), "\(message)")
            #expect(!message.contains("\n"), "\(message)")
        }
    }
}
