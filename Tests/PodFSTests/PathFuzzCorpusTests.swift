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

    @Test func everyCorpusFeedKeepsTheNamingRulesFromBytesToReads() throws {
        let files = try Self.replay(directory: Self.fuzzDirectory("corpus/path"))
        #expect(files > 0, "no corpus in Tests/Fuzz/corpus/path")
    }

    /// The handmade seeds whose numbers every version of podfs handles:
    /// names of every kind, dates and durations out of range.
    @Test(arguments: ["names.xml", "dates.xml", "durations.xml"])
    func handmadeSeedKeepsTheNamingRulesFromBytesToReads(_ file: String) throws {
        try Self.replay(file: Self.fuzzDirectory("seeds/path") + "/" + file)
    }

    // MARK: - Helpers

    /// Runs every file of `directory` through the fuzz target; returns how
    /// many there were.
    @discardableResult
    static func replay(directory: String) throws -> Int {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        for file in files { try replay(file: directory + "/" + file) }
        return files.count
    }

    /// Runs one input through the fuzz target with an index of its own.
    static func replay(file: String) throws {
        do {
            try replay(bytes: [UInt8](Data(contentsOf: URL(fileURLWithPath: file))))
        } catch let finding as PathFuzzFinding {
            throw PathFuzzFinding(description: "\(file): \(finding)")
        }
    }

    /// Runs `bytes` through the fuzz target with an index of its own.
    static func replay(bytes: [UInt8]) throws {
        let directory = NSTemporaryDirectory() + "podfs-pathfuzz-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "podfs.pathfuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        let index = try CacheIndex(directory: directory, logger: logger)
        _ = try bytes.withUnsafeBufferPointer { try pathFuzzOneInput($0.baseAddress, $0.count, index: index) }
    }

    /// A folder under Tests/Fuzz.
    static func fuzzDirectory(_ path: String) -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/Tests/Fuzz/" + path
    }
}
