import PodFS
import Testing

/// The rule that picks the next feed fetch: bounds in total and per host,
/// `Retry-After` resting a host, retries of transient failures.
@Suite struct FeedScheduleTests {
    // MARK: - Helpers

    /// Starts everything that may start at `now`; the URLs started.
    private static func startAll(_ schedule: inout FeedSchedule, now: Double = 0) -> [String] {
        var started: [String] = []
        while case .start(let url, _) = schedule.next(now: now) { started.append(url) }
        return started
    }

    // MARK: - Tests

    @Test func noMoreThanTheTotalRunAtOnce() {
        let urls = (0..<10).map { "https://h\($0).example/feed.xml" }
        var schedule = FeedSchedule(urls: urls, limits: .init(total: 3, perHost: 2))
        #expect(Self.startAll(&schedule) == Array(urls.prefix(3)))
        #expect(schedule.next(now: 0) == .waitForAFetch)
        schedule.ended(url: urls[1], now: 1)
        #expect(Self.startAll(&schedule, now: 1) == [urls[3]])
    }

    @Test func noMoreThanThePerHostBoundRunAgainstOneHost() {
        let busy = (0..<5).map { "https://busy.example/\($0).xml" }
        let other = "https://other.example/feed.xml"
        var schedule = FeedSchedule(urls: busy + [other], limits: .init(total: 10, perHost: 2))
        // The third feed of the busy host is passed over for the other host.
        #expect(Self.startAll(&schedule) == [busy[0], busy[1], other])
        schedule.ended(url: busy[0], now: 1)
        #expect(Self.startAll(&schedule, now: 1) == [busy[2]])
    }

    @Test func aHangingHostHoldsOnlyItsOwnSlots() {
        let hanging = (0..<3).map { "http://hang.example:81/\($0).xml" }
        let fine = (0..<20).map { "http://fine\($0).example/feed.xml" }
        var schedule = FeedSchedule(urls: hanging + fine, limits: .init(total: 4, perHost: 2))
        var started = Self.startAll(&schedule)
        // The hanging host's two never end; every other feed still runs.
        var now = 0.0
        while let url = started.first(where: { !$0.contains("hang") }) {
            now += 1
            schedule.ended(url: url, now: now)
            started.removeAll { $0 == url }
            started += Self.startAll(&schedule, now: now)
        }
        #expect(schedule.pendingCount == 3)
        #expect(started == [hanging[0], hanging[1]])
        #expect(schedule.isPending(hanging[2]))
    }

    @Test func hostsAreSchemeHostAndPortWithoutUserInformation() {
        #expect(FeedSchedule.host(of: "HTTPS://User:pw@Feeds.Example:8443/a?b") == "https://feeds.example:8443")
        #expect(FeedSchedule.host(of: "http://feeds.example/a") != FeedSchedule.host(of: "https://feeds.example/a"))
        #expect(FeedSchedule.host(of: "http://a.example?x=1") == "http://a.example")
    }

    @Test func retryAfterRestsTheWholeHostUntilItsTime() {
        let throttled = "https://busy.example/a.xml"
        let sibling = "https://busy.example/b.xml"
        let elsewhere = "https://calm.example/c.xml"
        var schedule = FeedSchedule(urls: [throttled], limits: .init(total: 10, perHost: 4))
        #expect(Self.startAll(&schedule) == [throttled])
        schedule.add(url: sibling)
        schedule.add(url: elsewhere)
        let retry = schedule.ended(url: throttled, now: 100, transient: true, retryAfter: 30)
        #expect(retry == 130)
        // The sibling waits with the throttled feed; the other host does not.
        #expect(schedule.next(now: 100) == .start(url: elsewhere, attempt: 1))
        #expect(schedule.next(now: 129.9) == .wait(until: 130))
        #expect(schedule.next(now: 130) == .start(url: sibling, attempt: 1))
        #expect(schedule.next(now: 130) == .start(url: throttled, attempt: 2))
    }

    @Test func aTransientFailureWithoutRetryAfterBacksOffAndGivesUp() {
        let url = "https://flaky.example/feed.xml"
        var schedule = FeedSchedule(urls: [url], limits: .standard)
        #expect(schedule.next(now: 0) == .start(url: url, attempt: 1))
        #expect(schedule.ended(url: url, now: 0, transient: true) == 1)
        #expect(schedule.next(now: 0.5) == .wait(until: 1))
        #expect(schedule.next(now: 1) == .start(url: url, attempt: 2))
        #expect(schedule.ended(url: url, now: 1, transient: true) == 3)
        #expect(schedule.next(now: 3) == .start(url: url, attempt: 3))
        #expect(schedule.ended(url: url, now: 3, transient: true) == nil)
        #expect(schedule.next(now: 100) == .done)
    }

    @Test func aFinalFailureOrALongRetryAfterIsNotRetriedInTheRound() {
        let url = "https://gone.example/feed.xml"
        var schedule = FeedSchedule(urls: [url], limits: .standard)
        _ = schedule.next(now: 0)
        #expect(schedule.ended(url: url, now: 0, transient: false, retryAfter: 5) == nil)
        #expect(schedule.next(now: 0) == .done)
        schedule.add(url: url)
        #expect(schedule.next(now: 10) == .start(url: url, attempt: 1))
        #expect(schedule.ended(url: url, now: 10, transient: true, retryAfter: 3600, longestWait: 300) == nil)
        #expect(schedule.next(now: 10) == .done)
    }

    @Test func aFeedIsNotAddedTwice() {
        let url = "https://a.example/feed.xml"
        var schedule = FeedSchedule(urls: [url, url], limits: .standard)
        #expect(schedule.pendingCount == 1)
        _ = schedule.next(now: 0)
        schedule.add(url: url)
        #expect(schedule.pendingCount == 1)
        #expect(schedule.next(now: 0) == .waitForAFetch)
    }

    @Test func anUnknownEndIsIgnored() {
        var schedule = FeedSchedule(urls: ["https://a.example/x"], limits: .standard)
        #expect(schedule.ended(url: "https://b.example/y", now: 0, transient: true) == nil)
        #expect(schedule.pendingCount == 1)
    }
}
