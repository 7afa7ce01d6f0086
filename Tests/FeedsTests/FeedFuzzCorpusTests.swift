import Foundation
import Testing

/// Replays the feed fuzzing corpus (Tests/Fuzz/corpus/feed, the inputs
/// `scripts/fuzz feed` found interesting) through the fuzz target's own
/// checks (FeedFuzz.swift, shared with the fuzzer): no input crashes the
/// parser, and each parses to the same result twice. A finding fails this
/// test, naming the input; only a trap still ends the run.
struct FeedFuzzCorpusTests {
    @Test func everyCorpusInputParsesTheSameTwice() throws {
        let corpus = FuzzCorpus.directory("feed")
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
        #expect(!files.isEmpty, "no corpus in \(corpus)")
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: corpus + "/" + file))
            let bytes = [UInt8](data)
            let finding = bytes.withUnsafeBufferPointer { feedFuzzFinding($0.baseAddress, $0.count) }
            #expect(finding == nil, "Tests/Fuzz/corpus/feed/\(file): \(finding ?? "")")
        }
    }
}

/// Where the committed fuzzing corpora live.
enum FuzzCorpus {
    static func directory(_ target: String) -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/Tests/Fuzz/corpus/" + target
    }
}
