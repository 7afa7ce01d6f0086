import Testing

@testable import PodFS
@testable import ReadRules

/// A sync server's answers, hostile ones first: refused whole or cleaned,
/// never half-read.
@Suite struct SyncAnswerTests {
    private let limits = SyncLimits()

    private func changes(_ json: String, limits: SyncLimits = SyncLimits()) throws(SyncAnswerError) -> ServerChanges {
        try SyncAnswer.changes(Array(json.utf8), limits: limits)
    }

    private func refusal(_ json: String, limits: SyncLimits = SyncLimits()) -> SyncAnswerError.Code? {
        do {
            _ = try changes(json, limits: limits)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aPlainAnswerIsRead() throws {
        let read = try changes(#"{"add": ["https://a.example/f.xml"], "remove": [], "timestamp": 12345}"#)
        #expect(read == ServerChanges(add: ["https://a.example/f.xml"], remove: [], timestamp: 12345))
    }

    @Test func oddURLsAreSkippedDuplicatesRemovedAndSchemesRewritten() throws {
        let json = #"""
            {"add": ["https://a.example/f.xml", "https://a.example/f.xml", "javascript:alert(1)",
                     "file:///etc/passwd", "ftp://x.example/f", "itpc://b.example/p", "  https://c.example/x y "],
             "remove": ["gopher://g"], "timestamp": 1, "extra": {"ignored": true}}
            """#
        let read = try changes(json)
        #expect(read.add == ["https://a.example/f.xml", "http://b.example/p", "https://c.example/x%20y"])
        #expect(read.remove.isEmpty && read.skipped == 4)
        // Where podfs reads a URL in another spelling, the server's is kept.
        #expect(read.spellings == ["http://b.example/p": "itpc://b.example/p", "https://c.example/x%20y": "  https://c.example/x y "])
    }

    @Test(arguments: [
        ("not json", SyncAnswerError.Code.notJSON), ("", .notJSON), ("[1,2]", .notAnObject),
        (#"{"remove": [], "timestamp": 1}"#, .missingField), (#"{"add": [], "remove": []}"#, .missingField),
        (#"{"add": "https://a", "remove": [], "timestamp": 1}"#, .wrongType),
        (#"{"add": [1], "remove": [], "timestamp": 1}"#, .wrongType),
        (#"{"add": [null], "remove": [], "timestamp": 1}"#, .wrongType),
        (#"{"add": [], "remove": [], "timestamp": "1"}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": 1.5}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": 2.0}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": true}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": -1}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": 1e30}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": 9223372036854775807}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": 99999999999999999999}"#, .badTimestamp),
        (#"{"add": [], "remove": [], "timestamp": null}"#, .badTimestamp),
    ])
    func aHostileAnswerIsRefusedWhole(json: String, code: SyncAnswerError.Code) {
        #expect(refusal(json) == code, "\(json)")
    }

    @Test func anAnswerOverTheBoundIsRefusedWhole() {
        let urls = (0..<10_000).map { "\"https://x.example/\($0).xml\"" }.joined(separator: ",")
        #expect(refusal(#"{"add": [\#(urls)], "remove": [], "timestamp": 1}"#) == .tooMany)
        #expect(refusal(#"{"add": [], "remove": [\#(urls)], "timestamp": 1}"#) == .tooMany)
        let small = SyncLimits(maxEntries: 2)
        #expect(refusal(#"{"add": ["https://a","https://b","x"], "remove": [], "timestamp": 1}"#, limits: small) == .tooMany)
    }

    @Test func aLongURLIsSkipped() throws {
        let long = "https://a.example/" + String(repeating: "x", count: 5_000)
        #expect(try changes(#"{"add": ["\#(long)"], "remove": [], "timestamp": 1}"#).skipped == 1)
    }

    @Test func receiptsOfBothLayoutsAreRead() throws {
        let gpodder = #"{"timestamp": 7, "update_urls": [["https://a.example/ x", "https://a.example/x"], ["feed://b", ""], ["https://c", "https://c"]]}"#
        let receipt = try SyncAnswer.receipt(Array(gpodder.utf8), limits: limits)
        #expect(receipt.timestamp == 7)
        #expect(receipt.renames == [.init(from: "https://a.example/%20x", to: "https://a.example/x")])
        #expect(try SyncAnswer.receipt(Array(#"{"timestamp": 8}"#.utf8), limits: limits) == PushReceipt(timestamp: 8))
        #expect(try SyncAnswer.receipt([], limits: limits) == PushReceipt(timestamp: nil))
        #expect(throws: SyncAnswerError.self) {
            try SyncAnswer.receipt(Array(#"{"timestamp": 1, "update_urls": [["a"]]}"#.utf8), limits: limits)
        }
        #expect(throws: SyncAnswerError.self) {
            try SyncAnswer.receipt(Array(#"{"timestamp": "x"}"#.utf8), limits: limits)
        }
    }
}
