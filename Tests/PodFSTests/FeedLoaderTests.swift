import Feeds
import Foundation
import Locking
import Logging
import PodFS
import RangeCache
import Testing
import ReadRules

/// Conditional GETs and the last good copy, with an in-memory feed source.
@Suite struct FeedLoaderTests {
    // MARK: - Helpers

    /// Answers with whatever the test set, and remembers what it was asked.
    private final class ScriptedSource: FeedSource {
        let answer = Locked<Result<FeedResponse, FetchError>>(.success(.notModified))
        let asked = Locked<[FeedValidators?]>([])

        func fetchFeed(url: String) throws(FetchError) -> [UInt8] {
            guard case .body(let body, _, _) = try fetchFeed(url: url, validators: nil) else { return [] }
            return body
        }

        func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
            asked.withLock { $0.append(validators) }
            return try answer.withLock { $0 }.get()
        }
    }

    private static let url = "https://feeds.example/show.xml"

    private static func feed(_ titles: [String]) -> [UInt8] {
        let items = titles.enumerated().map { index, title in
            "<item><title>\(title)</title><guid>g\(index)</guid><enclosure url=\"https://cdn.example/\(index).mp3\"/></item>"
        }
        return Array("<rss version=\"2.0\"><channel><title>Show</title>\(items.joined())</channel></rss>".utf8)
    }

    private func withLoader(_ body: (FeedLoader, ScriptedSource, CacheIndex) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-loader-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory, logger: logger)
        let source = ScriptedSource()
        try body(FeedLoader(source: source, index: index, logger: logger), source, index)
    }

    // MARK: - Tests

    @Test func theKeptCopysValidatorsMakeTheNextGetConditional() throws {
        try withLoader { loader, source, index throws in
            source.answer.withLock { $0 = .success(.body(Self.feed(["A"]), etag: "\"v1\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")) }
            guard case .fresh(let first) = loader.load(url: Self.url) else {
                Issue.record("the first load failed")
                return
            }
            #expect(first.episodes.count == 1)
            #expect(source.asked.withLock { $0 } == [nil], "nothing kept yet: an unconditional GET")
            source.answer.withLock { $0 = .success(.notModified) }
            guard case .notModified = loader.refresh(url: Self.url) else {
                Issue.record("a 304 is not a change")
                return
            }
            #expect(source.asked.withLock { $0.last } == FeedValidators(etag: "\"v1\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT"))
            // A remount answered 304 shows the kept copy as current.
            guard case .fresh(let again) = loader.load(url: Self.url) else {
                Issue.record("a 304 at mount time must give the kept copy")
                return
            }
            #expect(again == first)
            #expect(try index.feedBody(url: Self.url)?.etag == "\"v1\"")
        }
    }

    @Test func aBrokenOrUnreachableFeedKeepsTheLastGoodCopyAndSaysWhy() throws {
        try withLoader { loader, source, index throws in
            source.answer.withLock { $0 = .success(.body(Self.feed(["A", "B"]), etag: "\"v1\"", lastModified: nil)) }
            _ = loader.load(url: Self.url)
            source.answer.withLock { $0 = .success(.body(Array("not a feed".utf8), etag: "\"v2\"", lastModified: nil)) }
            guard case .failed(let reason, _, _) = loader.refresh(url: Self.url) else {
                Issue.record("a broken feed must fail")
                return
            }
            #expect(reason.contains("does not parse"))
            #expect(try index.feedBody(url: Self.url)?.etag == "\"v1\"", "the broken copy is not kept")
            source.answer.withLock {
                $0 = .failure(FetchError(isTransient: true, isUnreachable: true, message: "no route to host"))
            }
            guard case .failed(let offline, _, _) = loader.refresh(url: Self.url) else {
                Issue.record("an unreachable origin must fail")
                return
            }
            #expect(offline.contains("could not be fetched") && offline.contains("no route to host"))
            guard case .cached(let kept, _) = loader.load(url: Self.url) else {
                Issue.record("offline, a mount shows the last good copy")
                return
            }
            #expect(kept.episodes.count == 2)
        }
    }

    /// A feed its server cut off (no closing `</channel></rss>`) parses in
    /// recover mode up to the cut: with a whole copy kept, it is a failed
    /// refresh (the listing stays, the reason is said), never the new
    /// kept copy; with none, it is shown as far as it goes.
    @Test func aFeedCutOffByItsServerKeepsTheWholeCopy() throws {
        let whole = Self.feed(["A", "B", "C", "D"])
        let text = String(decoding: whole, as: UTF8.self)
        let cut = Array(text[..<text.range(of: "<item><title>C")!.upperBound].utf8)
        try withLoader { loader, source, index throws in
            source.answer.withLock { $0 = .success(.body(whole, etag: "\"v1\"", lastModified: nil)) }
            _ = loader.load(url: Self.url)
            source.answer.withLock { $0 = .success(.body(cut, etag: "\"v2\"", lastModified: nil)) }
            guard case .failed(let reason, let isTransient, _) = loader.refresh(url: Self.url) else {
                Issue.record("a cut feed must not replace the whole one")
                return
            }
            #expect(reason.contains("cut it off") && reason.contains("2 whole episodes") && isTransient)
            #expect(try index.feedBody(url: Self.url)?.etag == "\"v1\"", "the cut copy is not kept")
            guard case .cached(let kept, _) = loader.load(url: Self.url) else {
                Issue.record("a mount shows the whole kept copy")
                return
            }
            #expect(kept.episodes.count == 4)
        }
        try withLoader { loader, source, _ throws in
            source.answer.withLock { $0 = .success(.body(cut, etag: "\"v2\"", lastModified: nil)) }
            guard case .fresh(let first) = loader.load(url: Self.url) else {
                Issue.record("with nothing kept, the episodes before the cut are shown")
                return
            }
            #expect(first.episodes.count == 2 && first.endsEarly)
            // Its server cuts every copy: the kept one is cut too, and holds
            // nothing back.
            let later = Self.feed(["A", "B", "C", "D", "E"])
            let laterText = String(decoding: later, as: UTF8.self)
            let laterCut = Array(laterText[..<laterText.range(of: "<item><title>D")!.upperBound].utf8)
            source.answer.withLock { $0 = .success(.body(laterCut, etag: "\"v3\"", lastModified: nil)) }
            guard case .updated(let grown, _) = loader.refresh(url: Self.url) else {
                Issue.record("a cut feed whose kept copy is cut too is shown as far as it goes")
                return
            }
            #expect(grown.episodes.count == 3)
            // Cut shorter than the kept copy, which is cut too: no episode
            // leaves the listing.
            source.answer.withLock { $0 = .success(.body(cut, etag: "\"v4\"", lastModified: nil)) }
            guard case .failed(let shorter, _, _) = loader.refresh(url: Self.url) else {
                Issue.record("a copy cut shorter than the kept one must not replace it")
                return
            }
            #expect(shorter.contains("cut it off"))
        }
    }

    @Test func theSameBytesAgainAreNotAChange() throws {
        try withLoader { loader, source, _ throws in
            source.answer.withLock { $0 = .success(.body(Self.feed(["A"]), etag: nil, lastModified: nil)) }
            _ = loader.load(url: Self.url)
            guard case .notModified = loader.refresh(url: Self.url) else {
                Issue.record("an origin without validators sending the same feed changed nothing")
                return
            }
            source.answer.withLock { $0 = .success(.body(Self.feed(["A", "B"]), etag: nil, lastModified: nil)) }
            guard case .updated(let feed, kept: true) = loader.refresh(url: Self.url) else {
                Issue.record("a new episode is a change")
                return
            }
            #expect(feed.episodes.count == 2)
        }
    }

    @Test func aCopyTheIndexRefusesIsReportedNotKept() throws {
        let directory = NSTemporaryDirectory() + "podfs-loader-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        _ = try CacheIndex(directory: directory, logger: logger)
        // Opened for reading only: every save fails, as on a full disk.
        let index = try CacheIndex(readingDirectory: directory, logger: logger)
        let source = ScriptedSource()
        let loader = FeedLoader(source: source, index: index, logger: logger)
        source.answer.withLock { $0 = .success(.body(Self.feed(["A"]), etag: "\"v1\"", lastModified: nil)) }
        guard case .updated(let feed, kept: false) = loader.refresh(url: Self.url, conditional: false) else {
            Issue.record("a copy the index refused is a change that was not kept")
            return
        }
        #expect(feed.episodes.count == 1)
        #expect(try index.feedBody(url: Self.url) == nil)
    }
}
