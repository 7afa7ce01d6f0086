import Foundation
import TestSupport
import Testing

/// `podfs search` against a directory on 127.0.0.1 (the test origin serving
/// a canned iTunes Search API answer at `/search`): the real binary prints
/// the feed URLs, asks with the words encoded, and fails with one clear
/// line when the directory is wrong.
@Suite(.serialized, .needs(Requirement.programs(["python3", "curl"], for: "serves a directory")))
struct SearchTests {
    // MARK: - Helpers

    /// A directory answer: two usable shows and one without a feed URL.
    private static let answer = """
        {"resultCount": 3, "results": [
          {"wrapperType": "track", "kind": "podcast", "collectionName": "Foo Bar Weekly",
           "artistName": "Foo \\u001b[31mMedia", "trackCount": 120, "feedUrl": "{{BASE}}/feeds/foo.xml"},
          {"wrapperType": "track", "kind": "podcast", "collectionName": "No Feed Here", "trackCount": 5},
          {"wrapperType": "track", "kind": "podcast", "collectionName": "Bar Talk", "artistName": "Bar",
           "trackCount": "7", "feedUrl": "https://bar.example/rss"}
        ]}
        """

    /// Puts `answer` at `path`, `{{BASE}}` replaced by the origin's URL
    /// (the origin fills in templates only for feed files).
    private static func serve(_ answer: String, at path: String, on origin: TestOrigin) throws {
        try origin.put(path, Data(answer.replacingOccurrences(of: "{{BASE}}", with: origin.base).utf8))
    }

    /// What the origin saw as the query of each request for `path`.
    private static func queries(_ origin: TestOrigin, _ path: String) throws -> [String] {
        let paths = try origin.stats()["paths"] as? [String: Any]
        let entry = paths?[path] as? [String: Any]
        return (entry?["queries"] as? [Any])?.compactMap { $0 as? String } ?? []
    }

    // MARK: - Tests

    @Test func theMatchesFeedURLsArePrintedAndTheWordsSentEncoded() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try Self.serve(Self.answer, at: "search", on: fixture.origin)
        try fixture.origin.reset()
        let run = try Harness.run(
            Harness.podfs, ["search", "--directory", fixture.origin.base, "--limit", "5", "foo bar", "&", "café"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.text == """
            Foo Bar Weekly (Foo [31mMedia, 120 episodes)
              \(fixture.origin.base)/feeds/foo.xml
            Bar Talk (Bar, 7 episodes)
              https://bar.example/rss

            """)
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        #expect(try Self.queries(fixture.origin, "/search") == [
            "media=podcast&entity=podcast&term=foo+bar+%26+caf%C3%A9&limit=5"
        ])
        let agents = try fixture.origin.userAgents("search")
        #expect(agents.count == 1 && agents[0].hasPrefix("podfs/"), "\(agents)")
    }

    @Test func jsonPrintsTheMatchesForScripts() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try Self.serve(Self.answer, at: "api/search", on: fixture.origin)
        let run = try Harness.run(
            Harness.podfs, ["search", "--json", "--directory", fixture.origin.base + "/api/search/", "foo"])
        #expect(run.status == 0, "\(run.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: run.stdout) as? [[String: Any]]
        let matches = try #require(parsed, "\(run.text)")
        #expect(matches.map { $0["title"] as? String } == ["Foo Bar Weekly", "Bar Talk"])
        #expect(matches.map { $0["feedURL"] as? String } == [fixture.origin.base + "/feeds/foo.xml", "https://bar.example/rss"])
        #expect(matches.map { ($0["episodeCount"] as? NSNumber)?.intValue } == [120, 7])
        // The escape character is in the JSON as an escape, never raw.
        #expect(matches.first?["author"] as? String == "Foo \u{1B}[31mMedia")
        #expect(run.text.lowercased().contains(#"foo \u001b[31mmedia"#), "\(run.text)")
        #expect(!run.text.unicodeScalars.contains("\u{1B}"))
        #expect(try Self.queries(fixture.origin, "/api/search") == [
            "media=podcast&entity=podcast&term=foo&limit=20"
        ])
    }

    @Test func noMatchesSaysSoAndSucceeds() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.origin.put("search", Data(#"{"resultCount": 0, "results": []}"#.utf8))
        let run = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "nothing", "here"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.text.isEmpty)
        #expect(run.stderr == "podfs search: no podcasts found for \"nothing here\"\n")
        let json = try Harness.run(Harness.podfs, ["search", "--json", "--directory", fixture.origin.base, "nothing"])
        #expect(json.status == 0)
        let parsed = try JSONSerialization.jsonObject(with: json.stdout) as? [Any]
        #expect(parsed?.isEmpty == true, "\(json.text)")
    }

    @Test func aDirectoryWithoutTheAPIFailsWithOneClearLine() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let missing = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "foo"])
        #expect(missing.status == 1)
        #expect(missing.text.isEmpty)
        #expect(missing.stderr == """
            podfs search: the directory at \(fixture.origin.base)/search answered 404 (Not Found) instead of search \
            results; check that --directory points at a server speaking the iTunes Search API

            """)

        try fixture.origin.put("search", Data("<html><body>Welcome to nginx!</body></html>".utf8))
        let garbage = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "foo"])
        #expect(garbage.status == 1)
        #expect(garbage.stderr.hasPrefix("podfs search: the directory at \(fixture.origin.base)/search did not answer with JSON"))
        #expect(garbage.stderr.filter { $0 == "\n" }.count == 1, "\(garbage.stderr)")

        try fixture.origin.put("search", Data(#"{"results": {"feedUrl": "http://x.example/"}}"#.utf8))
        let object = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "foo"])
        #expect(object.status == 1)
        #expect(object.stderr.contains(#"answered JSON with no "results" list"#), "\(object.stderr)")
    }

    @Test func anAnswerOverFourMiBIsNotReadFurther() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let padding = String(repeating: " ", count: 5 << 20)
        try fixture.origin.put("search", Data(("{\"results\": [" + padding + "]}").utf8))
        let run = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "foo"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("is larger than 4 MiB and was not read further"), "\(run.stderr)")
        #expect(try fixture.origin.bytesSent("search") < 5 << 20)
    }

    @Test func aBusyDirectoryIsToldAsSuchAndNothingIsPrinted() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try Self.serve(Self.answer, at: "search", on: fixture.origin)
        try fixture.origin.configure(#"{"status": {"/search": {"code": 503}}}"#)
        let run = try Harness.run(Harness.podfs, ["search", "--directory", fixture.origin.base, "foo"])
        #expect(run.status == 1)
        #expect(run.text.isEmpty)
        #expect(run.stderr == """
            podfs search: the directory at \(fixture.origin.base)/search answered 503 (Service Unavailable); try again later

            """)
    }

    @Test func aDirectoryNobodyListensOnFailsWithOneClearLine() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let base = fixture.origin.base
        fixture.origin.stop()
        let run = try Harness.run(Harness.podfs, ["search", "--directory", base, "foo"])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("podfs search: could not reach the directory at \(base)/search ("), "\(run.stderr)")
        #expect(run.stderr.filter { $0 == "\n" }.count == 1, "\(run.stderr)")
    }

    @Test func badArgumentsAreRefusedBeforeAnyRequest() throws {
        let cases: [([String], String)] = [
            (["search"], "give the words to search for"),
            (["search", "  "], "give the words to search for"),
            (["search", "--limit", "0", "x"], "--limit needs a number of matches from 1 to 200"),
            (["search", "--limit", "201", "x"], "--limit needs a number of matches from 1 to 200"),
            (["search", "--directory", "ftp://x.example", "x"], "--directory needs an http or https URL"),
        ]
        for (arguments, expected) in cases {
            let run = try Harness.run(Harness.podfs, arguments)
            #expect(run.status != 0, "\(arguments)")
            #expect(run.stderr.contains(expected), "\(arguments): \(run.stderr)")
        }
    }
}
