import Testing

@testable import RangeCache

/// Kept copies of feeds are stored gzip-compressed, and copies kept plain
/// by an earlier podfs still read.
@Suite struct FeedBodyCodingTests {
    /// A feed of `items` items with show notes, as hosts write them.
    private func feed(items: Int) -> [UInt8] {
        var text = "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>Show</title>\n"
        for item in 0..<items {
            text += "<item><title>Episode \(item)</title><guid>g-\(item)</guid>"
            text += "<description><![CDATA[<p>Notes with <a href=\"https://example.org/\(item)\">links</a>.</p>]]></description>"
            text += "<enclosure url=\"https://cdn.example.org/e/\(item).mp3\" length=\"\(30_000_000 + item)\" type=\"audio/mpeg\"/></item>\n"
        }
        return Array((text + "</channel></rss>\n").utf8)
    }

    @Test func aFeedComesBackByteForByteFromAQuarterOfItsSizeOrLess() {
        let body = feed(items: 2_000)
        let stored = FeedBodyCoding.encode(body)
        #expect(stored.starts(with: [0x1f, 0x8b]), "stored as gzip")
        #expect(stored.count * 4 <= body.count, "\(stored.count) bytes stored for \(body.count)")
        #expect(FeedBodyCoding.decode(stored).elementsEqual(body), "inflated byte for byte")
    }

    @Test func aCopyKeptPlainByAnEarlierPodfsReadsAsItIs() {
        let body = feed(items: 3)
        #expect(FeedBodyCoding.decode(body) == body)
        #expect(FeedBodyCoding.decode([]) == [])
        #expect(FeedBodyCoding.encode([]) == [])
    }

    @Test func aDamagedCopyComesBackAsStoredNeverHalfInflated() {
        let stored = FeedBodyCoding.encode(feed(items: 500))
        let cut = Array(stored.prefix(stored.count / 2))
        #expect(FeedBodyCoding.decode(cut).elementsEqual(cut), "a cut copy is returned as stored")
        var flipped = stored
        flipped[stored.count / 2] ^= 0xff
        #expect(FeedBodyCoding.decode(flipped).elementsEqual(flipped), "a damaged copy is returned as stored")
    }

    @Test func aBodyThatGrowsPastEveryGuessStillInflatesWhole() {
        // 8 MiB of one byte: gzip's trailer tells the size, and the first
        // guess (four times the stored size) is far too small.
        let body = [UInt8](repeating: 0x20, count: 8 << 20)
        let stored = FeedBodyCoding.encode(body)
        #expect(stored.count * 4 < body.count)
        #expect(FeedBodyCoding.decode(stored).elementsEqual(body), "inflated byte for byte")
    }
}
