import Testing
import ReadRules

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
        let report = try Self.walked(Self.feed(length: "9223372036854775807"))
        #expect(report.episodeSizes.count == 4, "the episode stat'ed in both folders on both walks: \(report)")
    }

    /// A length that `makeStat` survives (at most `Int64.max - 511`; this
    /// one is `Int64.max - 16,081`, as the fuzzer found it): the fetch that
    /// a read of the last 4 KiB plans, `ReadPlan.widenedEnd`
    /// (`gap.lowerBound + window`, EpisodeReader.planFetch), overflowed.
    @Test func aLengthJustBelowInt64MaxPlansReadsWithoutATrap() throws {
        let bytes = Self.feed(length: "9223372036854759726")
        let report = try Self.walked(bytes)
        #expect(report.episodeSizes.count == 4, "the episode stat'ed in both folders on both walks: \(report)")
        // The parser now takes such a length for unknown, so the walk above
        // never plans a read that far: plan them at the length itself.
        let plans = try pathFuzzPlanReads(length: 9_223_372_036_854_759_726, seed: bytes)
        #expect(plans.plannedFetches >= 2, "reads up to the last 4 KiB planned fetches: \(plans)")
    }

    /// The fuzzer's own crashers, as it wrote them: each trapped in `stat`
    /// or a read's plan, so each must get that far again.
    @Test func theFuzzersCrashersRunWithoutATrap() throws {
        let reports = try PathFuzzCorpusTests.replay(directory: PathFuzzCorpusTests.fuzzDirectory("crashes/path"))
        #expect(reports.count > 0)
        for (file, report) in reports {
            #expect(report?.episodeSizes.isEmpty == false, "\(file) reaches stat: \(String(describing: report))")
        }
    }

    // MARK: - Helpers

    /// Runs `bytes` through the fuzz target and requires that they got past
    /// the parser: mounted, refreshed, and every file stat'ed with reads
    /// planned (the fuzz target returns early for bytes that are not a feed,
    /// which would let a test of `stat` pass without one).
    private static func walked(_ bytes: [UInt8]) throws -> PathFuzzReport {
        let report = try #require(try PathFuzzCorpusTests.replay(bytes: bytes), "the feed parses and mounts")
        #expect(report.refreshed, "the refresh ran")
        print("path fuzz regression: \(report)")
        return report
    }

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
