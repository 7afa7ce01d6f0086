import ArgumentParser
import Foundation
import PodFS
import RangeCache

/// `podfs cache clear [FEED]`: empties the cache, or one feed's part of it.
struct CacheClear: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Delete cached episode bytes: all of them, or one feed's.",
        discussion: """
            FEED is a feed URL or a show title as 'podfs status' shows them. The feeds and episode \
            names stay known (a mount still lists them, also offline); their bytes are fetched \
            again when read. Pinned episodes (user.podfs.pinned) are kept unless --all is given. \
            Refuses, changing nothing, while a mount uses the cache: unmount first. \
            Exit status: 0 done, 2 nothing done (no such feed, no cache, or the cache is in use).
            """)

    @Option(name: .long, help: "The cache directory (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(name: .long, help: "Clear pinned episodes too.")
    var all = false

    @Argument(help: "Only this feed's episodes: its URL or its show title.")
    var feed: String?

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        try CacheCommand.withCache(directory: directory, command: "cache clear") { index, maintenance, logger in
            if let moved = index.damagedIndexMovedTo {
                print("The cache index was damaged: moved it to \(moved) and started a new, empty one.")
            }
            let report: CacheReport
            do {
                report = CacheReport(directory: directory, snapshot: try index.snapshot(), logger: logger)
            } catch {
                CacheCommand.fail("could not read the cache index: \(error)")
            }
            var keys: Set<String>?
            var what = "the cache"
            if let feed {
                let match = Self.match(feed, in: report.feeds)
                keys = Set(match.episodes.map(\.key))
                what = "\(TerminalText.clean(match.title)) (\(TerminalText.clean(match.url)))"
            }
            // Pinned episodes stay unless --all; counted when they hold bytes.
            let pinned: Set<String> = all ? [] : ((try? index.keepSettings().pinned) ?? [])
            let chosen = keys ?? Set(report.feeds.flatMap { $0.episodes.map(\.key) })
            let spared = report.feeds.flatMap(\.episodes)
                .filter { pinned.contains($0.key) && chosen.contains($0.key) && $0.cachedBytes > 0 }.count
            let result: CacheClearing
            do {
                result = try maintenance.clear(keys: keys, sparing: pinned)
            } catch {
                CacheCommand.fail("could not clear the cache: \(error); nothing the index lists was deleted")
            }
            print(
                "Cleared \(what): forgot \(CacheMaintenance.bytes(result.forgottenBytes)) cached in "
                    + "\(result.episodes) episodes, deleted \(result.files) cache files "
                    + "(\(CacheMaintenance.bytes(result.freedBytes)) on disk)."
                    + (spared > 0 ? " Kept \(spared) pinned episode\(spared == 1 ? "" : "s") (--all clears them too)." : ""))
        }
    }

    /// The one feed `text` names: its URL, else its title (exact, then
    /// ignoring case). Exits with a list of the feeds when none or several
    /// match.
    private static func match(_ text: String, in feeds: [CacheReport.Feed]) -> CacheReport.Feed {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let tiers: [(CacheReport.Feed) -> Bool] = [
            { $0.fullURL == trimmed },
            { $0.fullURL.lowercased() == trimmed.lowercased() },
            // What `podfs status` showed, pasted back.
            { $0.url == trimmed },
            { $0.title == trimmed },
            { $0.title.lowercased() == trimmed.lowercased() },
        ]
        for tier in tiers {
            let found = feeds.filter(tier)
            if found.count == 1 { return found[0] }
            if found.count > 1 {
                CacheCommand.fail(
                    "'\(text)' names \(found.count) feeds; give the URL of the one to clear:\n"
                        + found.map { "  \(TerminalText.clean($0.title))  \(TerminalText.clean($0.url))" }.joined(separator: "\n"))
            }
        }
        let known = feeds.isEmpty ? "  (none)" : feeds.map { "  \(TerminalText.clean($0.title))  \(TerminalText.clean($0.url))" }.joined(separator: "\n")
        CacheCommand.fail(
            "no feed in the cache is called '\(text)'; nothing was cleared. Give a URL or a show title from:\n\(known)")
    }
}
