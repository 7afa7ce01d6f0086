import Foundation
import Logging
import RangeCache

/// A cache index in a directory of its own under the system's temporary
/// directory, with a logger that says only what is critical. The test
/// removes it: `defer { scratch.remove() }`.
struct TemporaryIndex {
    let directory: URL
    let logger: Logger
    let index: CacheIndex

    /// `name` starts the directory's name, to tell whose it is.
    init(_ name: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        self.logger = logger
        index = try CacheIndex(directory: directory.path, logger: logger)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}
