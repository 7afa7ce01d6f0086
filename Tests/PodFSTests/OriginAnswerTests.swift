import PodFS
import Testing
import ReadRules

/// One rule for what an origin's answer means, for episodes and feeds.
@Suite struct OriginAnswerTests {
    /// 2026-11-23 12:00:00 UTC.
    private let now = 1_795_435_200.0

    @Test(arguments: [200, 203, 206, 299])
    func aSuccessIsUsable(status: Int) {
        #expect(OriginAnswer(status: status, retryAfter: nil, now: now) == .usable)
    }

    @Test func notModifiedIsItsOwnAnswer() {
        #expect(OriginAnswer(status: 304, retryAfter: nil, now: now) == .notModified)
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504, 599])
    func busyOrBrieflyBrokenIsWorthAskingAgain(status: Int) {
        let answer = OriginAnswer(status: status, retryAfter: nil, now: now)
        #expect(answer == .transient(retryAfter: nil))
        #expect(answer.failure(status: status, url: "https://example.com/a.mp3").isTransient)
    }

    @Test(arguments: [301, 400, 401, 403, 404, 410, 416, 451, 600, 0, -1])
    func anythingElseIsFinal(status: Int) {
        let answer = OriginAnswer(status: status, retryAfter: "5", now: now)
        #expect(answer == .final)
        #expect(answer.retryAfter == nil)
        #expect(!answer.failure(status: status, url: "https://example.com/a.mp3").isTransient)
    }

    @Test func retryAfterIsReadInSecondsOrAsADate() {
        #expect(OriginAnswer(status: 429, retryAfter: "7", now: now).retryAfter == 7)
        #expect(OriginAnswer(status: 503, retryAfter: "Mon, 23 Nov 2026 12:00:30 GMT", now: now).retryAfter == 30)
        #expect(OriginAnswer(status: 503, retryAfter: "soon", now: now) == .transient(retryAfter: nil))
        #expect(OriginAnswer(status: 503, retryAfter: "99999999999", now: now).retryAfter == FetchHead.longestRetryDelay)
    }

    @Test func theFailureNamesTheStatusAndHidesSecrets() {
        let failure = OriginAnswer(status: 429, retryAfter: "3", now: now)
            .failure(status: 429, url: "https://user:secret@example.com/feed?token=abc")
        #expect(failure.message.contains("HTTP 429"))
        #expect(!failure.message.contains("secret"))
        #expect(!failure.message.contains("token=abc"))
        #expect(failure.retryAfter == 3)
        #expect(!failure.isUnreachable)
    }
}

/// The version an answer shows, against the one cached (guarantee 3).
@Suite struct OriginVersionTests {
    @Test func nothingKnownIsNoChange() {
        let none = OriginVersion(length: nil, etag: nil, lastModified: nil)
        #expect(!none.isReplaced(by: OriginVersion(length: 10, etag: "\"a\"", lastModified: nil)))
    }

    @Test func aChangedLengthOrValidatorIsANewVersion() {
        let cached = OriginVersion(length: 100, etag: "\"a\"", lastModified: "Mon, 23 Nov 2026 12:00:00 GMT")
        #expect(!cached.isReplaced(by: cached))
        #expect(cached.isReplaced(by: OriginVersion(length: 101, etag: "\"a\"", lastModified: nil)))
        #expect(cached.isReplaced(by: OriginVersion(length: 100, etag: "\"b\"", lastModified: nil)))
        // An answer without an ETag says nothing about it.
        #expect(!cached.isReplaced(by: OriginVersion(length: 100, etag: nil, lastModified: "other")))
        let dated = OriginVersion(length: 100, etag: nil, lastModified: "A")
        #expect(dated.isReplaced(by: OriginVersion(length: 100, etag: nil, lastModified: "B")))
    }

    @Test func ifRangeSendsAStrongETagElseTheDate() {
        #expect(OriginVersion(length: 1, etag: "\"a\"", lastModified: "D").ifRange == "\"a\"")
        // Never a weak ETag, nor a date beside one (RFC 9110, 13.1.5).
        #expect(OriginVersion(length: 1, etag: "W/\"a\"", lastModified: "D").ifRange == nil)
        #expect(OriginVersion(length: 1, etag: nil, lastModified: "D").ifRange == "D")
        #expect(OriginVersion(length: 1, etag: nil, lastModified: nil).ifRange == nil)
    }

    /// RFC 9110, 8.8.2.2: a Last-Modified proves bytes only when it is a
    /// minute or more older than the response's Date, and never beside a
    /// weak ETag.
    @Test func aLastModifiedValidatesOnlyWhenStrong() {
        let date = "Fri, 27 Nov 2026 12:00:00 GMT"
        let old = "Fri, 27 Nov 2026 11:59:00 GMT"
        let fresh = "Fri, 27 Nov 2026 11:59:30 GMT"
        let now = 1_795_780_800.0  // 2026-11-27 12:00:00 UTC
        #expect(OriginVersion.validating(lastModified: old, etag: nil, date: date, receivedAt: 0) == old)
        #expect(OriginVersion.validating(lastModified: fresh, etag: nil, date: date, receivedAt: now) == nil)
        // A date in the future names no version either.
        #expect(OriginVersion.validating(lastModified: date, etag: nil, date: old, receivedAt: now) == nil)
        // Without a Date, the time the head came is the measure.
        #expect(OriginVersion.validating(lastModified: old, etag: nil, date: nil, receivedAt: now) == old)
        #expect(OriginVersion.validating(lastModified: fresh, etag: nil, date: "garbage", receivedAt: now) == nil)
        // Beside a weak ETag nothing; beside a strong one, as sent.
        #expect(OriginVersion.validating(lastModified: old, etag: "W/\"e\"", date: date, receivedAt: now) == nil)
        #expect(OriginVersion.validating(lastModified: fresh, etag: "\"e\"", date: date, receivedAt: now) == fresh)
        #expect(OriginVersion.validating(lastModified: "not a date", etag: nil, date: date, receivedAt: now) == nil)
    }

    @Test func onlyAStrongETagOrALastModifiedAloneProvesAVersion() {
        #expect(OriginVersion(length: 1, etag: "\"a\"", lastModified: nil).isProvable)
        #expect(OriginVersion(length: 1, etag: nil, lastModified: "D").isProvable)
        #expect(!OriginVersion(length: 1, etag: "W/\"a\"", lastModified: "D").isProvable)
        #expect(!OriginVersion(length: 1, etag: nil, lastModified: nil).isProvable)
    }
}
