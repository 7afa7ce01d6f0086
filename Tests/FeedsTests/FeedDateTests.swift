import Feeds
import Testing

/// Date parsing with the variants real feeds use.
@Suite struct FeedDateTests {
    /// 2005-08-03 12:34:56 UTC.
    private static let reference: Int64 = 1_123_072_496

    @Test(arguments: [
        "Wed, 03 Aug 2005 12:34:56 GMT",
        "Wed, 03 Aug 2005 12:34:56 +0000",
        "Wed, 03 Aug 2005 12:34:56 UT",
        "Wed, 03 Aug 2005 12:34:56 UTC",
        "Wed, 03 Aug 2005 12:34:56 Z",
        "Wed 03 Aug 2005 12:34:56 GMT",  // no comma (Taverncast)
        "03 Aug 2005 12:34:56 GMT",  // no weekday
        "Fri, 03 Aug 2005 12:34:56 GMT",  // wrong weekday
        "Wednesday, 3 August 2005 12:34:56 GMT",  // full names, one-digit day
        "Wed, 03 Aug 05 12:34:56 GMT",  // two-digit year
        "Wed, 03 Aug 2005 08:34:56 EDT",
        "Wed, 03 Aug 2005 07:34:56 EST",
        "Wed, 03 Aug 2005 07:34:56 CDT",
        "Wed, 03 Aug 2005 06:34:56 CST",
        "Wed, 03 Aug 2005 06:34:56 MDT",
        "Wed, 03 Aug 2005 05:34:56 MST",
        "Wed, 03 Aug 2005 05:34:56 PDT",
        "Wed, 03 Aug 2005 04:34:56 PST",
        "Wed, 03 Aug 2005 14:34:56 +0200",
        "Wed, 03 Aug 2005 07:04:56 -05:30",
        "Wed, 03 Aug 2005 12:34:56 GMT+0000",
        "Wed, 03 Aug 2005 13:34:56 GMT+01:00",
        "Wed, 03 Aug 2005 12:34:56 +0000 (UTC)",
        "  Wed, 03 Aug 2005 12:34:56 GMT\n",
        "Wed, 03-Aug-2005 12:34:56 GMT",
        "Wed, 03 Aug 2005 12:34:56 A",  // military letters count as UTC (RFC 2822)
        "2005-08-03T12:34:56Z",
        "2005-08-03T12:34:56.789Z",
        "2005-08-03T14:34:56+02:00",
        "2005-08-03T07:34:56-0500",
        "2005-08-03 12:34:56",
        "2005-08-03T12:34:56",
        // More real-world shapes.
        "Wed, 3 Aug 2005 05:34:56 PDT",  // one-digit day with a named zone
        "03 August 2005 08:34:56 EDT",  // no weekday, full month
        "Wed,03 Aug 2005 12:34:56 GMT",  // no space after the comma
        "Wed 03 August 2005 12:34:56 +0000",  // no comma and a full month
        "Wed, 03 Aug 2005 12:34:56 -0000",
        "Wed, 03 Aug 2005 14:34:56 GMT+2",
        "Wed, 03 Aug 2005 12:34:56 +0000 GMT",
        "Thu, 03 Aug 2005 12:34:56 +0000",  // wrong weekday with an offset
        "Sunday, 03-Aug-05 12:34:56 GMT",  // RFC 850, wrong weekday
        "Wed Aug  3 12:34:56 2005",  // asctime
        "Wed Aug 3 05:34:56 PDT 2005",  // date(1)
        "August 3, 2005 12:34:56 GMT",
        "Wed, 03 Aug 2005 12:34:56 gmt",
        "Wed, 03 Aug 2005 12:34:56 Europe/London",  // a zone name: UTC, date kept
        "Wed, 03 Aug 2005 12:34:56.000 GMT",
        "Wed, 03 Aug 2005 12:34:56 PM GMT",
        "Wed, 03 Aug 2005 23:34:56 AEDT",
        "Wed, 03 Aug 2005 21:34:56 JST",
        "2005-08-03T12:34:56.123456789Z",
        "2005-08-03T12:34:56+00",
        "2005-08-03t12:34:56z",
    ])
    func parsesVariants(_ text: String) {
        #expect(FeedDate.parse(text) == Self.reference, "\(text)")
    }

    @Test func missingSecondsAndMissingTime() {
        #expect(FeedDate.parse("Wed, 03 Aug 2005 12:34 GMT") == Self.reference - 56)
        #expect(FeedDate.parse("Wed, 03 Aug 2005") == Self.reference - 45_296)
        #expect(FeedDate.parse("2005-08-03") == Self.reference - 45_296)
        #expect(FeedDate.parse("2005-08-03T12:34Z") == Self.reference - 56)
    }

    @Test func twoDigitYearsFollowRFC2822() {
        #expect(FeedDate.parse("01 Jan 49 00:00:00 GMT") == 2_493_072_000)
        #expect(FeedDate.parse("01 Jan 70 00:00:00 GMT") == 0)
        #expect(FeedDate.parse("Fri, 16 Jun 06 00:00:00 GMT") == 1_150_416_000)
        #expect(FeedDate.parse("01 Jan 99 00:00:00 GMT") == 915_148_800)
    }

    @Test func theCorpusDateShapesParse() {
        // From se-radio, giantbomb, Taverncast, podverse and narro: rss-parser
        // maps Giant Bomb's year-round PST to -08:00, so does podfs.
        #expect(FeedDate.parse("Tue, 01 Oct 2019 14:30:00 PST") == 1_569_969_000)
        #expect(FeedDate.parse("Fri, 9 Oct 2020 10:30:00 GMT") == 1_602_239_400)
        #expect(FeedDate.parse("07 Nov 2015 12:00:00 EST") == 1_446_915_600)
        #expect(FeedDate.parse("Fri, 16 June 2006 12:00:00 GMT") == 1_150_459_200)
        #expect(FeedDate.parse("Tue, 20 December 2011 00:00:00 UTC") == 1_324_339_200)
    }

    @Test func unknownZoneAbbreviationCountsAsUTC() {
        #expect(FeedDate.parse("Wed, 03 Aug 2005 12:34:56 XYZ") == Self.reference)
    }

    @Test(arguments: [
        "", "someday", "Wed, 32 Aug 2005 12:00:00 GMT", "Wed, 29 Feb 2005 12:00:00 GMT",
        "2005-13-01T00:00:00Z", "Aug 2005", "Wed, 03 Aug 2005 25:00:00 GMT", "2005-08-03Tnoon",
        "Τετ, 03 Αυγ 2005 12:34:56 GMT",
    ])
    func rejectsWhatIsNotADate(_ text: String) {
        #expect(FeedDate.parse(text) == nil, "\(text)")
    }

    @Test func leapDayAndCivilRoundTrip() {
        #expect(FeedDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") == 951_782_400)
        #expect(FeedDate.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        for days: Int64 in [-1, 0, 59, 11_016, 19_000, 2_932_896] {
            let (y, m, d) = FeedDate.civil(fromUnix: days * 86_400 + 3_600)
            #expect(FeedDate.daysFromCivil(year: y, month: m, day: d) == days)
        }
        #expect(FeedDate.civil(fromUnix: -1) == (1969, 12, 31))
    }
}
