import Foundation
import RangeCache
import Testing

/// `ScratchFile` reads and writes at offsets in a sparse file and reports
/// failures as a `FileError` naming the file.
@Suite struct ScratchFileTests {
    // MARK: - Helpers

    /// Runs `body` with a fresh temporary directory, removed afterwards even
    /// when `body` throws.
    private func withTemporaryDirectory(_ body: (String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ScratchFileTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory.path)
    }

    /// The file's size as the file system reports it.
    private func sizeOnDisk(_ path: String) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? -1
    }

    // MARK: - Tests

    @Test func existsAndRemoveFollowTheFile() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/episode"
            #expect(!ScratchFile.exists(path: path))
            _ = try ScratchFile(path: path, length: 4096)
            #expect(ScratchFile.exists(path: path))
            try ScratchFile.remove(path: path)
            #expect(!ScratchFile.exists(path: path))
            // Removing what is already gone is fine; a folder is not a file.
            try ScratchFile.remove(path: path)
            #expect(throws: FileError.self) { try ScratchFile.remove(path: directory) }
        }
    }

    @Test func volumeSpaceMeasuresTheFolderItsFileSystem() throws {
        try withTemporaryDirectory { directory in
            let space = try #require(VolumeSpace(of: directory))
            #expect(space.total > 0)
            #expect((0...space.total).contains(space.free))
            #expect(VolumeSpace(of: directory + "/not-there") == nil)
        }
    }

    @Test func createsTheFileWithTheRequestedLength() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/episode"
            let file = try ScratchFile(path: path, length: 1_000_000)
            #expect(file.path == path)
            #expect(file.fileDescriptor >= 0)
            #expect(try file.currentLength() == 1_000_000)
            #expect(try sizeOnDisk(path) == 1_000_000)
        }
    }

    @Test func bytesWrittenAtOffsetsReadBack() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 10_000)
            let first: [UInt8] = Array(0..<200)
            let second: [UInt8] = [0xde, 0xad, 0xbe, 0xef]
            try file.write(first, at: 100)
            try file.write(second, at: 9_996)
            #expect(try file.read(count: 200, at: 100) == first)
            #expect(try file.read(count: 4, at: 9_996) == second)
            // A read straddling written and unwritten bytes.
            #expect(try file.read(count: 4, at: 98) == [0, 0, 0, 1])
            #expect(try file.currentLength() == 10_000)
        }
    }

    @Test func overwritingReplacesOnlyTheWrittenBytes() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 16)
            try file.write([UInt8](repeating: 1, count: 16), at: 0)
            try file.write([9, 9], at: 4)
            #expect(try file.read(count: 16, at: 0) == [1, 1, 1, 1, 9, 9] + [UInt8](repeating: 1, count: 10))
        }
    }

    @Test func readIntoBufferFillsItAndReportsTheCount() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 8)
            try file.write([1, 2, 3, 4, 5, 6, 7, 8], at: 0)
            var buffer = [UInt8](repeating: 0xff, count: 4)
            let got = try buffer.withUnsafeMutableBytes { try file.read(into: $0, at: 2) }
            #expect(got == 4)
            #expect(buffer == [3, 4, 5, 6])
        }
    }

    @Test func unwrittenBytesOfASparseFileReadAsZeros() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 64 << 20)
            try file.write([7, 7, 7], at: 32 << 20)
            #expect(try file.read(count: 4096, at: 0) == [UInt8](repeating: 0, count: 4096))
            #expect(try file.read(count: 5, at: (32 << 20) - 1) == [0, 7, 7, 7, 0])
            let tail = try file.read(count: 4096, at: (64 << 20) - 4096)
            #expect(tail == [UInt8](repeating: 0, count: 4096))
        }
    }

    @Test func readingPastTheEndReturnsFewerBytes() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 10)
            try file.write([1, 2, 3], at: 7)
            #expect(try file.read(count: 100, at: 7) == [1, 2, 3])
            #expect(try file.read(count: 10, at: 10) == [])
            #expect(try file.read(count: 10, at: 1_000) == [])
        }
    }

    @Test func punchedHoleReadsAsZerosAndKeepsTheSize() throws {
        try withTemporaryDirectory { directory in
            let length: Int64 = 3 * 65_536
            let file = try ScratchFile(path: directory + "/episode", length: length)
            let pattern = (0..<Int(length)).map { UInt8(truncatingIfNeeded: $0 % 251 + 1) }
            try file.write(pattern, at: 0)
            try file.synchronize()
            try file.punchHole(65_536..<131_072)
            #expect(try file.currentLength() == length)
            let all = try file.read(count: Int(length), at: 0)
            #expect(all.count == Int(length))
            #expect(Array(all[0..<65_536]) == Array(pattern[0..<65_536]))
            #expect(all[65_536..<131_072].allSatisfy { $0 == 0 })
            #expect(Array(all[131_072...]) == Array(pattern[131_072...]))
        }
    }

    @Test func holesAreFoundWhereNothingWasWrittenOrBytesWerePunched() throws {
        try withTemporaryDirectory { directory in
            let length: Int64 = 4 * 65_536
            let file = try ScratchFile(path: directory + "/episode", length: length)
            try file.write([UInt8](repeating: 7, count: 65_536), at: 0)
            try file.write([UInt8](repeating: 7, count: 2 * 65_536), at: 2 * 65_536)
            try file.punchHole(2 * 65_536..<3 * 65_536)
            let reader = try ScratchFile(existingAt: directory + "/episode")
            #expect(try reader.currentLength() == length, "opening for checks leaves the size alone")
            #expect(try reader.holes(in: 0..<65_536).isEmpty)
            #expect(try reader.holes(in: 1000..<65_536 + 10) == [65_536..<65_546])
            #expect(try reader.holes(in: 0..<length) == [65_536..<3 * 65_536])
            #expect(try reader.holes(in: 3 * 65_536..<length + 100) == [length..<length + 100], "past the end is a hole")
            #expect(throws: FileError.self) { try ScratchFile(existingAt: directory + "/missing") }
            try ScratchFile.remove(path: directory + "/episode")
            try ScratchFile.remove(path: directory + "/episode")
            #expect(access(directory + "/episode", F_OK) != 0)
        }
    }

    @Test func punchingAnUnalignedHoleZerosExactlyThoseBytes() throws {
        try withTemporaryDirectory { directory in
            let file = try ScratchFile(path: directory + "/episode", length: 20_000)
            try file.write([UInt8](repeating: 0xaa, count: 20_000), at: 0)
            try file.punchHole(1_000..<9_001)
            try file.punchHole(50..<50)
            #expect(try file.currentLength() == 20_000)
            let all = try file.read(count: 20_000, at: 0)
            #expect(all[0..<1_000].allSatisfy { $0 == 0xaa })
            #expect(all[1_000..<9_001].allSatisfy { $0 == 0 })
            #expect(all[9_001...].allSatisfy { $0 == 0xaa })
        }
    }

    @Test func resizeTruncatesAndExtendsSparsely() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/episode"
            let file = try ScratchFile(path: path, length: 100)
            try file.write([UInt8](repeating: 5, count: 100), at: 0)
            try file.resize(to: 40)
            #expect(try file.currentLength() == 40)
            #expect(try sizeOnDisk(path) == 40)
            #expect(try file.read(count: 100, at: 0) == [UInt8](repeating: 5, count: 40))
            try file.resize(to: 200)
            #expect(try file.currentLength() == 200)
            // Bytes cut off by the truncation do not come back.
            let all = try file.read(count: 200, at: 0)
            #expect(all == [UInt8](repeating: 5, count: 40) + [UInt8](repeating: 0, count: 160))
        }
    }

    @Test func reopeningKeepsContentsAndAdjustsTheLength() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/episode"
            do {
                let file = try ScratchFile(path: path, length: 100)
                try file.write([1, 2, 3], at: 10)
                try file.synchronize()
            }
            do {
                let file = try ScratchFile(path: path, length: 100)
                #expect(try file.read(count: 3, at: 10) == [1, 2, 3])
            }
            do {
                let file = try ScratchFile(path: path, length: 12)
                #expect(try file.currentLength() == 12)
                #expect(try file.read(count: 10, at: 10) == [1, 2])
            }
        }
    }

    @Test func openingInAMissingDirectoryNamesThePath() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/no-such-directory/episode"
            let error = #expect(throws: FileError.self) {
                _ = try ScratchFile(path: path, length: 10)
            }
            #expect(error?.operation == "open")
            #expect(error?.path == path)
            #expect(error?.errno == ENOENT)
            #expect(error?.isNoSpace == false)
            let description = error?.description ?? ""
            #expect(description.contains(path))
            #expect(description.hasPrefix("could not open the cache file "))
            #expect(description.contains("(ENOENT)"))
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func fileErrorDescriptionGivesARemedyForAFullDisk() {
        let error = FileError(operation: "pwrite", path: "/x/data/abc", errno: ENOSPC)
        #expect(error.isNoSpace)
        #expect(error.description.hasPrefix("could not write the cache file /x/data/abc: "))
        #expect(error.description.contains("(ENOSPC)."))
        #expect(error.description.hasSuffix("Free space or lower --cache-size."))
        #expect(FileError(operation: "pwrite", path: "/x", errno: EDQUOT).isNoSpace)
        #expect(!FileError(operation: "pwrite", path: "/x", errno: EIO).isNoSpace)
    }
}
