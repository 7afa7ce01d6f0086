import Foundation
import Testing

/// Replays the network fuzzing corpus (Tests/Fuzz/corpus/network, the
/// inputs `scripts/fuzz network` found interesting) and its handmade seeds
/// through the fuzz target's own checks (NetworkFuzz.swift, shared with the
/// fuzzer): HTTP status lines, Content-Range, Content-Length, Location,
/// hosts, cache sizes and Retry-After each keep what their parser promises.
/// A finding fails this test, naming the input; only a trap ends the run.
struct NetworkFuzzCorpusTests {
    @Test(arguments: ["corpus/network", "seeds/network"])
    func everyInputKeepsItsParsersPromises(_ folder: String) throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let directory = url.path + "/Tests/Fuzz/" + folder
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(!files.isEmpty, "no inputs in \(directory)")
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
            let finding = bytes.withUnsafeBufferPointer { networkFuzzFinding($0.baseAddress, $0.count) }
            #expect(finding == nil, "Tests/Fuzz/\(folder)/\(file): \(finding ?? "")")
        }
    }
}
