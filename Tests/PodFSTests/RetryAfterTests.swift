import PodFS
import Testing

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
        #expect((delay ?? 0) > 1_000_000)
    }
}
