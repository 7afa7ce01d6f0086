import Foundation
import Locking
import Logging
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The cache's cap, kept by `Eviction` against a real index in a temporary
/// directory: least recently read first, kept episodes never, the index
/// forgetting before the file goes.
@Suite struct EvictionTests {
    /// An index with four episodes of 100 bytes each, read last in the order
    /// b, c, d, a, each with its scratch file on disk.
    private func cache() throws -> (index: CacheIndex, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("eviction-\(UUID().uuidString)")
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let index = try CacheIndex(directory: directory.path, logger: logger)
        let keys = ["a", "b", "c", "d"]
        _ = try index.register(feeds: [(feedURL: "http://o/feed.xml", episodes: keys.map { ($0, "http://o/\($0).mp3") })])
        try index.commitRanges(keys.map { (key: $0, ranges: [0..<100]) })
        for (key, time) in zip(keys, [4, 1, 2, 3] as [Int64]) {
            index.touch(key: key, at: time)
            _ = try ScratchFile(path: index.dataPath(forKey: key), length: 100)
        }
        return (index, directory)
    }

    private func eviction(_ index: CacheIndex, limit: Int64?) -> Eviction {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let disk = DiskSpace(directory: index.directory)
        return Eviction(
            index: index, durability: Durability(index: index, disk: disk, logger: logger), episodes: Locked([:]),
            disk: disk, limit: limit, logger: logger)
    }

    private func cached(_ index: CacheIndex) throws -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: try index.usage().map { ($0.key, $0.bytes) })
    }

    @Test func overTheCapTheLeastRecentlyReadGoUntilNinetyPercentSparingKeptOnes() throws {
        let (index, directory) = try cache()
        defer { try? FileManager.default.removeItem(at: directory) }
        let eviction = eviction(index, limit: 250)
        eviction.kept.withLock { $0 = ["c"] }
        // 400 bytes over a cap of 250: b goes (300), c is kept, d goes
        // (200, under 225, the 90 % target), a stays.
        #expect(eviction.keepUnderCap() == 200)
        #expect(try cached(index) == ["a": 100, "b": 0, "c": 100, "d": 0])
        #expect(!ScratchFile.exists(path: index.dataPath(forKey: "b")) && !ScratchFile.exists(path: index.dataPath(forKey: "d")))
        #expect(ScratchFile.exists(path: index.dataPath(forKey: "a")) && ScratchFile.exists(path: index.dataPath(forKey: "c")))
    }

    @Test func underTheCapOrWithoutOneNothingGoes() throws {
        let (index, directory) = try cache()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(eviction(index, limit: 400).keepUnderCap() == 0)
        #expect(eviction(index, limit: nil).keepUnderCap() == 0)
        #expect(try cached(index).values.allSatisfy { $0 == 100 })
    }

    @Test func keptEpisodesOverTheCapStay() throws {
        let (index, directory) = try cache()
        defer { try? FileManager.default.removeItem(at: directory) }
        let eviction = eviction(index, limit: 10)
        eviction.kept.withLock { $0 = ["a", "b", "c", "d"] }
        #expect(eviction.keepUnderCap() == 0)
        #expect(try cached(index).values.allSatisfy { $0 == 100 })
    }
}
