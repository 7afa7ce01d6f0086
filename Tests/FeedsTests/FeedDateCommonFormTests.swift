@testable import Feeds
import Foundation
import Testing

/// The common RFC 822 form is read in place (`FeedDate.parseCommonForm`);
/// whatever it reads, the general parser must read the same, and what it
/// does not read falls through to the general parser.
@Suite struct FeedDateCommonFormTests {
    private static func common(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { FeedDate.parseCommonForm($0) }
    }

    @Test func readsTheFormFeedsWrite() {
        #expect(Self.common("Wed, 03 Aug 2005 12:34:56 GMT") == 1_123_072_496)
        #expect(Self.common("  wed, 3 aug 2005 14:34:56 +0200 \n") == 1_123_072_496)
        #expect(Self.common("03 Aug 2005 07:34:56 -0500") == 1_123_072_496)
        #expect(Self.common("Wed, 03 Aug 2005 12:34:56 UT") == 1_123_072_496)
    }

    @Test(arguments: [
        "Wed 03 Aug 2005 12:34:56 GMT",  // no comma
        "Wednesday, 3 August 2005 12:34:56 GMT",
        "Wed, 03 Aug 05 12:34:56 GMT",
        "Wed, 03 Aug 2005 12:34 GMT",
        "Wed, 03 Aug 2005 08:34:56 EDT",
        "Wed, 03 Aug 2005 12:34:56 +01:00",
        "Wed, 03 Aug 2005 12:34:56 GMT (comment)",
        "Wed, 32 Aug 2005 12:00:00 GMT",
        "Wed, 03 Aug 2005 12:34:56 +2400",
        "2005-08-03T12:34:56Z",
        "",
    ])
    func leavesEveryOtherFormToTheGeneralParser(_ text: String) {
        #expect(Self.common(text) == nil, "\(text)")
    }

    /// Dates of the common form over the ranges of every field, valid or
    /// not, in both cases, with and without a weekday: both parsers agree
    /// wherever the fast one answers.
    @Test func agreesWithTheGeneralParser() {
        var generator = SystemRandomNumberGenerator()
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "DEC", "mAr"]
        let weekdays = ["Mon, ", "tue, ", "SUN, ", "Fri, ", ""]
        let zones = ["GMT", "UT", "UTC", "utc", "+0000", "-0800", "+0530", "+2359", "-1260", "+9999"]
        var answered = 0
        for _ in 0..<20_000 {
            let day = Int.random(in: 0...32, using: &generator)
            let dayText = Bool.random(using: &generator) && day < 10 ? "0\(day)" : "\(day)"
            let text =
                weekdays.randomElement(using: &generator)! + dayText + " "
                + months.randomElement(using: &generator)! + " "
                + "\(Int.random(in: 1000...9999, using: &generator)) "
                + String(format: "%02d:%02d:%02d ", Int.random(in: 0...25, using: &generator),
                    Int.random(in: 0...60, using: &generator), Int.random(in: 0...61, using: &generator))
                + zones.randomElement(using: &generator)!
            guard let fast = Self.common(text) else { continue }
            answered += 1
            #expect(fast == FeedDate.parseAnyDate(text), "\(text)")
        }
        // Most generated dates are valid: the fast path must answer them.
        #expect(answered > 10_000)
    }
}
