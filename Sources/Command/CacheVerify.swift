import ArgumentParser
import Foundation
import RangeCache

/// `podfs cache verify`: checks the index against the scratch files and
/// repairs by forgetting what it cannot vouch for.
struct CacheVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the cache index against the cache files and repair what is wrong.",
        discussion: """
            Checks that every cached range lies inside its episode, that the episode's cache file \
            exists, has the episode's length and holds data (not holes) where ranges are listed, \
            and that every file in the cache belongs to an episode. Repairs by forgetting what it \
            cannot vouch for (those bytes are fetched again when read) and deleting files no \
            episode owns. Prints what it found and did. Exit status: 0 no problems, 1 problems \
            found and repaired, 2 could not check (no cache, or a mount is using it: unmount first).
            """)

    @Option(name: .long, help: "The cache directory (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        let verification: CacheVerification = try CacheCommand.withCache(directory: directory, command: "cache verify") {
            index, maintenance, logger in
            // Names first: a damaged index is replaced by the verification.
            let report = (try? index.snapshot()).map { CacheReport(directory: directory, snapshot: $0, logger: logger) }
            let result: CacheVerification
            do {
                result = try maintenance.verify()
            } catch {
                CacheCommand.fail("could not verify the cache: \(error)")
            }
            let names = report.map(CacheCommand.names) ?? [:]
            print(
                "Checked the cache in \(directory): \(result.episodes) episodes, \(result.files) cache files, "
                    + "\(CacheMaintenance.bytes(result.listedBytes)) listed as cached.")
            for finding in result.findings {
                let subject = names[finding.key].map { "\($0) (\(finding.key))" } ?? finding.key
                print("problem: \(subject): \(finding.problem); \(finding.repair).")
            }
            if result.findings.isEmpty {
                print("No problems: the index lists \(CacheMaintenance.bytes(result.vouchedBytes)), all checked against the cache files.")
            } else {
                let count = result.findings.count
                print(
                    "\(count) problem\(count == 1 ? "" : "s") found and repaired; the index now lists "
                        + "\(CacheMaintenance.bytes(result.vouchedBytes)), all checked against the cache files. "
                        + "What was forgotten is fetched again when read.")
            }
            return result
        }
        if !verification.findings.isEmpty { throw ExitCode(1) }
    }
}
