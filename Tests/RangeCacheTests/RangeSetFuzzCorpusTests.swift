import Foundation
import Testing

/// Replays the RangeSet fuzzing corpus (Tests/Fuzz/corpus/rangeset, the
/// programs `scripts/fuzz rangeset` found interesting) through the fuzz
/// target's model check (RangeSetFuzz.swift, shared with the fuzzer): every
/// operation's result and the set's invariants match a one-Bool-per-point
/// model, at 0, at Int64.min and up to Int64.max. A disagreement fails the
/// test, naming the program; only a trap still ends the run.
struct RangeSetFuzzCorpusTests {
    @Test func everyCorpusProgramMatchesTheModel() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let corpus = url.path + "/Tests/Fuzz/corpus/rangeset"
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
        #expect(!files.isEmpty, "no corpus in \(corpus)")
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: corpus + "/" + file)))
            #expect(throws: Never.self, "Tests/Fuzz/corpus/rangeset/\(file)") {
                try bytes.withUnsafeBufferPointer { buffer throws(RangeSetFuzzFinding) in
                    try rangeSetFuzzCheck(buffer.baseAddress, buffer.count)
                }
            }
        }
    }

    /// A fixed program touching every operation near Int64.max (the model
    /// check runs even without a corpus).
    @Test func aProgramAtTheTopOfTheLine() {
        var program: [UInt8] = [0b0000_0111]  // base: ends at Int64.max, scale 2^40
        for (op, a, b): (UInt8, UInt8, UInt8) in [
            (0, 10, 255), (1, 100, 120), (2, 5, 255), (3, 0, 255), (4, 0, 255), (5, 50, 130),
            (6, 10, 0), (6, 130, 0), (7, 1, 9), (7, 9, 3), (7, 255, 0), (7, 4, 4), (0, 254, 255), (2, 120, 255),
        ] {
            program += [op, a, b]
        }
        #expect(throws: Never.self) {
            try program.withUnsafeBufferPointer { buffer throws(RangeSetFuzzFinding) in
                try rangeSetFuzzCheck(buffer.baseAddress, buffer.count)
            }
        }
    }
}
