import Feeds
import Foundation
import Locking
import Logging
import RangeCache
import Testing

@testable import PodFS

/// Updates that land together are put in the tree together: a batch (of at
/// most 16), one registration, each show its own name, and two updates of
/// one feed never in the same batch.
@Suite struct CatalogBatchTests {
    // MARK: - Helpers

    private static func feed(_ title: String, episodes: Int = 3) throws -> ParsedFeed {
        let items = (0..<episodes).map { number in
            "<item><title>Episode \(number)</title><guid>\(number)</guid>"
                + "<enclosure url=\"https://cdn.example/\(title)/\(number).mp3\" length=\"1000\"/></item>"
        }
        let document = "<rss version=\"2.0\"><channel><title>\(title)</title>\(items.joined())</channel></rss>"
        return try FeedParser.parse(Array(document.utf8), baseURL: "https://feeds.example/")
    }

    private func withCatalog(_ body: (Catalog, CacheIndex) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-batch-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory, logger: logger)
        try body(try Catalog(feeds: [], index: index, logger: logger), index)
    }

    /// Runs `work` for each of `count` on threads of its own, while the test
    /// holds `updating`: the first to come carries out a batch (of itself,
    /// and of any that came before it took its batch) and waits for the
    /// lock; the others wait for it. Once all were submitted, the lock is
    /// let go. Returns each one's result.
    private func overlapping<T: Sendable>(
        _ catalog: Catalog, count: Int, _ work: @escaping @Sendable (Int) throws -> T
    ) throws -> [Result<T, any Error>] {
        let results = Locked<[Int: Result<T, any Error>]>([:])
        let done = DispatchSemaphore(value: 0)
        try catalog.updating.withLock { _ in
            for number in 0..<count {
                Thread {
                    let result = Result { try work(number) }
                    results.withLock { $0[number] = result }
                    done.signal()
                }.start()
            }
            let deadline = Date().addingTimeInterval(30)
            while catalog.updatesUnanswered < count {
                guard Date() < deadline else { throw CancellationError() }
                usleep(1_000)
            }
        }
        for _ in 0..<count { done.wait() }
        return (0..<count).map { results.withLock { $0 }[$0]! }
    }

    // MARK: - Tests

    @Test func fiftyNewShowsThatLandTogetherAreFewBatchesWithFiftyNames() throws {
        try withCatalog { catalog, index in
            let urls = (0..<50).map { "https://host\($0).example/feed" }
            let feed = try Self.feed("Show")
            let changes = try overlapping(catalog, count: 50) { number in
                try catalog.update(url: urls[number], feed: feed)
            }.map { try $0.get() }
            // The first batch holds 1 to 16 (those submitted before it was
            // taken); the rest wait for it and go in batches of 16: 4 or 5.
            #expect(
                (4...5).contains(catalog.updateBatches),
                "\(catalog.updateBatches) batches: the first, then the ones that waited for it, 16 at a time")
            #expect(changes.allSatisfy { $0.isNewShow })
            let names = catalog.shows.map(\.name)
            #expect(Set(names).count == 50, "every show its own name: \(names.sorted())")
            #expect(Set(names) == Set(["Show"] + (2...50).map { "Show (\($0))" }))
            #expect(Set(changes.map(\.showName)) == Set(names))
            let files = catalog.shows.flatMap(\.episodes)
            #expect(files.count == 150)
            #expect(Set(files.map(\.inode)).count == 150, "every file its own inode")
            for file in files {
                #expect(try index.episode(key: file.key)?.id == Int64(file.inode >> 2), "registered under its inode")
            }
        }
    }

    @Test func twoUpdatesOfOneFeedAreNeverInOneBatch() throws {
        try withCatalog { catalog, _ in
            let url = "https://host.example/feed"
            // The first update (another feed's) carries out the first batch
            // alone; two updates of one feed wait for it together.
            let urls = ["https://other.example/feed", url, url]
            let feeds = [try Self.feed("Other"), try Self.feed("Show", episodes: 2), try Self.feed("Show", episodes: 3)]
            let changes = try overlapping(catalog, count: 3) { number in
                if number > 0 {
                    let deadline = Date().addingTimeInterval(30)
                    while catalog.updateBatches == 0, Date() < deadline { usleep(1_000) }
                }
                return try catalog.update(url: urls[number], feed: feeds[number])
            }.map { try $0.get() }
            #expect(catalog.updateBatches == 3, "the second update of the feed waited for a batch of its own")
            let (new, again) = changes[1].isNewShow ? (changes[1], changes[2]) : (changes[2], changes[1])
            #expect(new.isNewShow && !again.isNewShow, "the later update found the earlier one's show")
            #expect(again.showInode == new.showInode && again.showName == "Show")
            #expect(again.addedNames.count + again.removedNames.count == 1, "it changed one episode")
            #expect(catalog.shows.map(\.name).sorted() == ["Other", "Show"])
        }
    }
}
