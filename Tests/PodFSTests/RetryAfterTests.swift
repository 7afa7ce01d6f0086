import PodFS
import Testing
import ReadRules

/// `Retry-After` read as the origin meant it: seconds, or an HTTP date.
@Suite struct RetryAfterTests {
    /// 2026-11-23 12:00:00 UTC.
    private let now = 1_795_435_200.0

    @Test func secondsAreTakenAsSent() {
        #expect(FetchHead.retryDelay(retryAfter: "120", now: now) == 120)
        #expect(FetchHead.retryDelay(retryAfter: " 0 ", now: now) == 0)
    }

    @Test func anHTTPDateIsTheTimeLeftUntilIt() {
        #expect(FetchHead.retryDelay(retryAfter: "Mon, 23 Nov 2026 12:00:30 GMT", now: now) == 30)
        // A date already past means "now", never a negative wait.
        #expect(FetchHead.retryDelay(retryAfter: "Mon, 23 Nov 2026 11:00:00 GMT", now: now) == 0)
    }

    @Test func nonsenseIsNoAdvice() {
        for value in [nil, "", "soon", "-5", "1.5", "Mon, 99 Foo 2026"] {
            #expect(FetchHead.retryDelay(retryAfter: value, now: now) == nil, "\(value ?? "nil")")
        }
    }

    @Test func anAbsurdNumberIsLongNotAnOverflow() {
        let delay = FetchHead.retryDelay(retryAfter: "99999999999999999999999", now: now)
        #expect(delay == FetchHead.longestRetryDelay)
    }
}

/// `Retry-After` at the extremes: never more than a day, never negative,
/// and nothing that is not plain digits or a date.
@Suite struct RetryAfterExtremeTests {
    private let now = 1_795_435_200.0

    @Test(arguments: [
        ("0", 0.0), ("86400", 86_400), ("86401", 86_400), ("2147483648", 86_400), ("9223372036854775807", 86_400),
        ("9223372036854775808", 86_400), ("18446744073709551616", 86_400), ("10000000000000000000000", 86_400),
        ("000000000000000000000030", 86_400),
    ])
    func secondsAreClampedToADay(_ value: String, _ expected: Double) {
        #expect(FetchHead.retryDelay(retryAfter: value, now: now) == expected, "\(value)")
    }

    @Test(arguments: ["-5", "-0", "+5", "1e30", "1e3", "0x10", "5 s", "５", "", " ", "inf", "nan"])
    func anythingButDigitsOrADateIsNoAdvice(_ value: String) {
        #expect(FetchHead.retryDelay(retryAfter: value, now: now) == nil, "\(value)")
    }

    @Test func aFarDateIsADay() {
        #expect(FetchHead.retryDelay(retryAfter: "Fri, 31 Dec 9999 23:59:59 GMT", now: now) == 86_400)
        #expect(FetchHead.retryDelay(retryAfter: "Mon, 01 Jan 0001 00:00:00 GMT", now: now).map { $0 <= 0 } != false)
    }
}
