import Foundation
import Logging
import RangeCache
import Testing

/// Replays the path fuzzing corpus (Tests/Fuzz/corpus/path, the feeds
/// `scripts/fuzz path` found interesting) through the fuzz target's own
/// checks (PathFuzz.swift, shared with the fuzzer): each feed is parsed,
/// mounted twice, refreshed, every node listed and `stat`ed through the
/// bridge's conversion and reads of every file planned; nothing traps and
/// every name keeps the naming rules.
struct PathFuzzCorpusTests {
    // MARK: - Tests

    /// The fuzzer keeps inputs that stop at the parser too (most of the
    /// corpus does); those that are feeds must reach `stat` and reads, and
    /// some must, or the replay proves nothing past the parser.
    @Test func everyCorpusFeedKeepsTheNamingRulesFromBytesToReads() throws {
        let reports = try Self.replay(directory: Self.fuzzDirectory("corpus/path"))
        let walked = reports.values.compactMap { $0 }.filter { $0.refreshed && !$0.episodeSizes.isEmpty }
        let fetches = walked.map(\.plannedFetches).reduce(0, +)
        print(
            "path fuzz corpus: \(reports.count) inputs, \(walked.count) mounted, refreshed and stat'ed with episodes, "
                + "\(walked.map(\.stats).reduce(0, +)) stats, \(fetches) planned fetches")
        #expect(reports.count > 0, "no corpus in Tests/Fuzz/corpus/path")
        #expect(walked.count > 0, "some of the corpus reaches stat and reads")
        #expect(fetches > 0, "reads of the corpus's files planned fetches")
    }

    /// The handmade seeds whose numbers every version of podfs handles:
    /// names of every kind, dates and durations out of range. Each is a
    /// feed: it is mounted, refreshed, and every file `stat`ed.
    @Test(arguments: ["names.xml", "dates.xml", "durations.xml"])
    func handmadeSeedKeepsTheNamingRulesFromBytesToReads(_ file: String) throws {
        let report = try #require(
            try Self.replay(file: Self.fuzzDirectory("seeds/path") + "/" + file), "\(file) parses as a feed")
        #expect(report.refreshed, "\(file) was refreshed")
        #expect(!report.episodeSizes.isEmpty, "\(file): episodes were stat'ed")
    }

    // MARK: - Helpers

    /// Runs every file of `directory` through the fuzz target; returns what
    /// each went through, by file name (`nil`: it stopped at the parser).
    static func replay(directory: String) throws -> [String: PathFuzzReport?] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        var reports: [String: PathFuzzReport?] = [:]
        for file in files { reports[file] = try replay(file: directory + "/" + file) }
        return reports
    }

    /// Runs one input through the fuzz target with an index of its own.
    @discardableResult
    static func replay(file: String) throws -> PathFuzzReport? {
        do {
            return try replay(bytes: [UInt8](Data(contentsOf: URL(fileURLWithPath: file))))
        } catch let finding as PathFuzzFinding {
            throw PathFuzzFinding(description: "\(file): \(finding)")
        }
    }

    /// Runs `bytes` through the fuzz target with an index of its own;
    /// what it went through (`nil`: it stopped at the parser).
    static func replay(bytes: [UInt8]) throws -> PathFuzzReport? {
        let directory = NSTemporaryDirectory() + "podfs-pathfuzz-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "podfs.pathfuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let index = try CacheIndex(directory: directory, logger: logger)
        return try bytes.withUnsafeBufferPointer { try pathFuzzRun($0.baseAddress, $0.count, index: index) }
    }

    /// A folder under Tests/Fuzz.
    static func fuzzDirectory(_ path: String) -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/Tests/Fuzz/" + path
    }
}
