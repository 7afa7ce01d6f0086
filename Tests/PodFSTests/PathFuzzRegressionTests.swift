import Testing

/// Feeds `scripts/fuzz path` found trapping, each reduced to the one
/// enclosure that does it and run through the fuzz target's checks
/// (`PathFuzzCorpusTests.replay`). The crashers themselves, as the fuzzer
/// wrote them, are in Tests/Fuzz/crashes/path.
/// Each trapped before lengths were bounded where they enter (beyond
/// 1 TiB is unknown) and the sums that use them were made saturating.
struct PathFuzzRegressionTests {
    // MARK: - Tests

    /// `makeStat` (Sources/FUSEBridge/Replies.swift) computes
    /// `(attributes.size + 511) / 512`: the first `ls -l` of the folder
    /// trapped, and the mount with it.
    @Test func aLengthOfInt64MaxStatsWithoutATrap() throws {
        try PathFuzzCorpusTests.replay(bytes: Self.feed(length: "9223372036854775807"))
    }

    /// A length that `makeStat` survives (at most `Int64.max - 511`; this
    /// one is `Int64.max - 16,081`, as the fuzzer found it): the fetch that
    /// a read of the last 4 KiB plans, `ReadPlan.widenedEnd`
    /// (`gap.lowerBound + window`, EpisodeReader.planFetch), overflowed.
    @Test func aLengthJustBelowInt64MaxPlansReadsWithoutATrap() throws {
        try PathFuzzCorpusTests.replay(bytes: Self.feed(length: "9223372036854759726"))
    }

    /// The fuzzer's own crashers, as it wrote them.
    @Test func theFuzzersCrashersRunWithoutATrap() throws {
        let files = try PathFuzzCorpusTests.replay(directory: PathFuzzCorpusTests.fuzzDirectory("crashes/path"))
        #expect(files > 0)
    }

    // MARK: - Helpers

    /// A feed of one episode whose enclosure claims `length` bytes.
    private static func feed(length: String) -> [UInt8] {
        Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Extremes</title>
            <item><title>Episode</title><guid>g0</guid><pubDate>Thu, 01 Jan 1970 00:00:00 GMT</pubDate>
            <enclosure url="https://x.example/e0.mp3" type="audio/mpeg" length="\(length)"/></item>
            </channel></rss>
            """.utf8)
    }
}
