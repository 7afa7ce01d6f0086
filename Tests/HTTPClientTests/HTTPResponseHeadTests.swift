import HTTPClient
import Testing

/// Numbers read from response headers: plain digits up to 1 TiB, or absent.
/// Nothing an origin writes may reach arithmetic that could trap.
@Suite struct HTTPResponseHeadTests {
    // MARK: - Helpers

    private func head(_ name: String, _ value: String) -> HTTPResponseHead {
        HTTPResponseHead(status: 206, headers: [(name: name, value: value)], effectiveURL: "http://o.example/a")
    }

    /// Numbers no length or position may be: signs, exponents, hex, white
    /// space inside, and everything past 1 TiB up to beyond 64 bits.
    static let malformed = [
        "", "-5", "-0", "+5", "1e30", "1e3", "0x10", "1.5", "5 5", " ", "２", "1_000",
        "1099511627777", "2147483648000", "9223372036854775807", "9223372036854775808",
        "18446744073709551616", "10000000000000000000000", "9999999999999999999999999999999999999999",
    ]

    // MARK: - Content-Length

    @Test(arguments: [("0", Int64(0)), ("2147483648", 2_147_483_648), ("1099511627776", 1 << 40), (" 42\t", 42),
        ("0000000000000000000000000007", 7)])
    func contentLengthIsPlainDigitsUpToATebibyte(_ value: String, _ expected: Int64) {
        #expect(head("content-length", value).contentLength == expected, "\(value)")
    }

    @Test(arguments: malformed)
    func anyOtherContentLengthIsAbsent(_ value: String) {
        #expect(head("content-length", value).contentLength == nil, "\(value)")
    }

    /// Names are kept in lower case as they arrive; a name asked for in
    /// any case finds them, and values keep what is inside their blanks.
    @Test func headersAreFoundByNameInAnyCase() {
        let head = HTTPResponseHead(
            status: 206, headers: [(name: "etag", value: "\"a b\""), (name: "x-note", value: "é x")],
            effectiveURL: "http://o.example/a")
        #expect(head.header("ETag") == "\"a b\"")
        #expect(head.header("etag") == "\"a b\"")
        #expect(head.header("X-Note") == "é x")
        #expect(head.header("Date") == nil)
    }

    // MARK: - Content-Range

    @Test func contentRangeReadsItsThreeNumbers() {
        #expect(numbers("bytes 0-1099511627775/1099511627776") == "0 1099511627775 1099511627776")
        #expect(numbers("BYTES 5-9/*") == "5 9 *")
        #expect(numbers("bytes */2147483648") == "-1 -1 2147483648")
        #expect(numbers("bytes 0-0/1") == "0 0 1")
        #expect(numbers(" \tbytes 1-2/3\t ") == "1 2 3")
        #expect(numbers("ByTeS 1-2/3") == "1 2 3")
    }

    private func numbers(_ value: String) -> String? {
        HTTPResponseHead.parseContentRange(value).map { "\($0.first) \($0.last) \($0.total.map(String.init) ?? "*")" }
    }

    @Test(arguments: malformed)
    func aMalformedNumberAnywhereInContentRangeVoidsIt(_ number: String) {
        for value in ["bytes \(number)-9/10", "bytes 0-\(number)/10", "bytes 0-9/\(number)", "bytes */\(number)"] {
            #expect(HTTPResponseHead.parseContentRange(value) == nil, "\(value)")
            #expect(head("content-range", value).contentRange == nil, "\(value)")
        }
    }

    @Test(arguments: [
        "bytes 9-5/10", "bytes 0-10/10", "bytes 0-9", "bytes=0-9/10", "bytes0-9/10", "bits 0-9/10", "bytes */*",
        "bytes -9/10", "bytes 0-/10", "bytes 0-9/10/11", "bytes 0--9/10", "bytes  0-9/10",
    ])
    func inconsistentContentRangesAreAbsent(_ value: String) {
        #expect(HTTPResponseHead.parseContentRange(value) == nil, "\(value)")
    }

    @Test func whatIsAcceptedLeavesRoomForArithmetic() {
        // The consumers compute last - first + 1, first + count, total - 1:
        // with every number at most 2^40, none of these can overflow.
        let largest = HTTPResponseHead.largestPosition
        #expect(largest == 1 << 40)
        #expect(largest.multipliedReportingOverflow(by: 1 << 20).overflow == false)
    }
}

/// Which redirect chains are a feed's move.
@Suite struct PermanentURLTests {
    private static func head(_ statuses: [Int]) -> HTTPResponseHead {
        var head = HTTPResponseHead(status: 200, headers: [], effectiveURL: "https://new.example/feed.xml")
        head.redirectStatuses = statuses
        return head
    }

    @Test func onlyAChainOfPermanentRedirectsIsAMove() {
        #expect(Self.head([301]).permanentURL == "https://new.example/feed.xml")
        #expect(Self.head([308, 301]).permanentURL == "https://new.example/feed.xml")
        #expect(Self.head([]).permanentURL == nil)
        #expect(Self.head([302]).permanentURL == nil)
        #expect(Self.head([307]).permanentURL == nil)
        #expect(Self.head([301, 302]).permanentURL == nil)
    }
}
