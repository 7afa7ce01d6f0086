import Foundation
import Logging
import Testing

@testable import PodFS

/// The mount's rehearsal of a first read (`Rehearsal`) plays the reader's
/// real open and reads, and leaves nothing behind.
@Suite struct RehearsalTests {
    @Test func theRehearsalReadsItsBytesAndRemovesItsDirectory() {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rehearsal-\(UUID().uuidString)").path
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        #expect(Rehearsal.run(in: directory, logger: logger), "the reads were answered with the source's bytes")
        #expect(!FileManager.default.fileExists(atPath: directory), "its directory is gone")
    }

    @Test func whatAKilledDaemonLeftDoesNotStopItAndIsRemoved() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rehearsal-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        // What a daemon killed mid-rehearsal leaves: an index that is not one.
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: directory + "/index.sqlite"))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        #expect(Rehearsal.run(in: directory, logger: logger))
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
