import ArgumentParser
import FUSEBridge
import Foundation
import Logging
import PodFS
import RangeCache

/// `podfs cache verify|clear`: maintenance of a cache no mount is using.
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Check or empty the cache.",
        discussion: """
            Both commands need the cache to themselves: while a mount uses the cache directory \
            they refuse, name the mount and change nothing; unmount it first.
            """,
        subcommands: [CacheVerify.self, CacheClear.self])

    /// Exit status of a command that could not run (busy, no cache, error).
    static let couldNotRun: Int32 = 2

    /// Opens the cache in `directory` for maintenance: it must exist, and no
    /// mount may be using it. Calls `body` holding the cache's lock.
    static func withCache<Result>(
        directory: String, command: String, _ body: (CacheIndex, CacheMaintenance, Logger) throws -> Result
    ) throws -> Result {
        var logger = Logger(label: "podfs")
        logger.logLevel = .error
        guard FileManager.default.fileExists(atPath: directory + "/index.sqlite") else {
            fail("there is no cache at \(directory) (no mount has used it yet); pick another with --cache-dir")
        }
        let lock: CacheLock
        do {
            lock = try CacheLock(directory: directory, owner: .maintenance(command), wait: 0)
        } catch {
            fail("\(error)")
        }
        defer { lock.release() }
        let index: CacheIndex
        do {
            index = try CacheIndex(directory: directory, logger: logger)
        } catch {
            fail("\(error)")
        }
        defer { index.checkpoint() }
        return try body(index, CacheMaintenance(index: index, logger: logger), logger)
    }

    /// Prints `message` to standard error and exits with `couldNotRun`.
    static func fail(_ message: String) -> Never {
        Console.error("podfs: \(message)\n")
        Foundation.exit(couldNotRun)
    }

    /// "Show / episode name" for an episode key, from the saved feeds.
    static func names(_ report: CacheReport) -> [String: String] {
        var names: [String: String] = [:]
        for feed in report.feeds {
            for episode in feed.episodes {
                // Printed on a terminal: titles come from feeds.
                names[episode.key] = TerminalText.clean(
                    "\(feed.title) / \(episode.name ?? "(no longer in the feed) \(episode.key)")")
            }
        }
        return names
    }
}
