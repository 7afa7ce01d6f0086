import ArgumentParser
import Foundation
import PodFS
import RangeCache

/// `podfs mount [options] SOURCE... MOUNTPOINT`.
struct Mount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount feeds on a directory.",
        discussion: """
            SOURCE is a feed URL (http or https), an OPML file, or a text file with one feed URL \
            per line. With one file as SOURCE, that file is the list of subscriptions that podfs \
            subscribe and unsubscribe edit and that podfs watches for edits; otherwise the list \
            is <cache-dir>/subscriptions.txt, and with no SOURCE the cache's list is mounted. \
            Without -f the command returns once the mount is ready and the file system \
            is served in the background; its log goes to --log-file. Stop it with \
            'podfs unmount MOUNTPOINT' (or fusermount3 -u).
            """)

    @Option(name: .long, help: "Where the cache lives (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(name: .short, help: "Stay in the foreground and log to standard error.")
    var foreground = false

    @Flag(name: .short, help: "Debug logging; implies -f.")
    var debug = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How much to log: trace, debug, info (the default), notice, warning or error.",
            discussion: "Also -o log_level=LEVEL. -d and -o debug mean debug."))
    var logLevel: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "In the background, log to syslog (journald: journalctl -t podfs) instead of a file.",
            discussion: "Also -o syslog or --log-file syslog."))
    var syslog = false

    @Option(
        name: .short,
        help: ArgumentHelp(
            "Mount options, comma separated: cache_dir=DIR, cache_size=SIZE, max_feed_size=SIZE, refresh=INTERVAL, "
                + "keep_latest=N, allow_private, proxy=URL, user_agent=TEXT, sync=URL, sync_password_file=FILE, "
                + "sync_device=NAME, allow_other, allow_root, auto_unmount, " + DaemonOptions.summary + ".",
            discussion: "Each is the -o twin of the long option of the same name (a long option wins); "
                + "a value may hold a comma written as \\, and a backslash as \\\\. "
                + "proxy=URL sends every request through that proxy (http, https or socks); without it, "
                + "proxy variables in the environment are ignored. "
                + "sync=URL syncs the subscriptions with a gpodder.net-API or Nextcloud GPodderSync server "
                + "(the user in the URL: https://alice@gpodder.net); the password comes from "
                + "sync_password_file=FILE (which others must not be able to read) or ~/.netrc; "
                + "sync_device=NAME names this device on the server (default: the host name). "
                + "fstab-only options (auto, noauto, user, users, _netdev, nofail, x-systemd.*) are ignored."))
    var o: [String] = []

    @Option(name: .long, help: "Where the background daemon logs (default: <cache-dir>/podfs.log).")
    var logFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The largest feed accepted: 64M (the default), 200M, or bytes.",
            discussion: "A larger feed is refused; its download stops at the limit. Also -o max_feed_size=."))
    var maxFeedSize: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Let feeds send podfs to any address (also -o allow_private).",
            discussion: "By default a feed from a public address may not make podfs connect to loopback, "
                + "private, link-local or reserved addresses, and one from a private address not to loopback."))
    var allowPrivate = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds between commits of cached ranges to the index.",
            discussion: "Each commit first flushes the cached bytes to disk (fdatasync). Shorter: less "
                + "to refetch after a crash; longer: faster downloads (fewer forced flushes). 0 commits after "
                + "every chunk received (slow; for measuring what batching saves)."))
    var commitInterval: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds after which opening an episode asks the origin again whether it changed.",
            discussion: "The first open in a mount always asks. Offline, the cached version is served."))
    var revalidateAfter: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The most the cache may hold: 500M, 10G, none.",
            discussion: "Default: half of the space the cache's file system has for it (free space plus what "
                + "the cache holds) when mounting. Least recently read episodes are evicted first, never an "
                + "open one."))
    var cacheSize: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often to fetch the feeds again: seconds, 30m, 1h, or off (default 30m).",
            discussion: "Each refresh is a conditional GET (ETag, Last-Modified) with gzip; new episodes "
                + "appear without a remount, a feed that fails keeps its listing (podfs status says why)."))
    var refresh: String?

    // Unconditional, as `prefetch --latest`: `-1` gets the range's message.
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Keep the newest N episodes of each show complete offline (default 0: none).",
            discussion: "They are downloaded in the background when they appear, pausing while a player "
                + "waits, and never evicted; an episode that leaves the newest N becomes ordinary cache. "
                + "A show's own N: setfattr -n user.podfs.keep_latest -v N on its folder. Pin an episode "
                + "whatever its age: setfattr -n user.podfs.pinned -v 1 on its file."))
    var keepLatest: Int?

    @Flag(name: .long, help: .hidden)
    var daemonChild = false

    @Argument(help: "Feed URLs, OPML files or URL list files (none: the cache's list), then the mount point.")
    var arguments: [String] = []

    mutating func validate() throws {
        guard !arguments.isEmpty else {
            throw ValidationError(
                "give a SOURCE and a MOUNTPOINT, e.g. podfs mount https://example.org/feed.xml ~/Podcasts "
                    + "(or only a MOUNTPOINT, to mount the cache's list of subscriptions)")
        }
        _ = try MountOptions(o)
        if let cacheSize {
            do {
                _ = try CacheSize(cacheSize)
            } catch {
                throw ValidationError("--cache-size: \(error)")
            }
        }
        if let refresh { _ = try RefreshInterval(refresh) }
        if let keepLatest, !(0...KeepPlan.maximumLatest).contains(keepLatest) {
            throw ValidationError("--keep-latest needs a number of episodes per show from 0 to \(KeepPlan.maximumLatest)")
        }
        if let logLevel, DaemonOptions.level(logLevel) == nil {
            throw ValidationError("--log-level takes \(DaemonOptions.levelNames), not '\(logLevel)'")
        }
        guard (revalidateAfter ?? 0) >= 0 else {
            throw ValidationError("--revalidate-after must be 0 or more seconds")
        }
        guard (commitInterval ?? 1) >= 0, (commitInterval ?? 1) <= 3600 else {
            throw ValidationError("--commit-interval must be between 0 and 3600 seconds")
        }
        if let maxFeedSize {
            guard let size = try? CacheSize(maxFeedSize), let bytes = size.bytes, bytes <= Int64(Int32.max) else {
                throw ValidationError("--max-feed-size needs a size up to 2G, e.g. --max-feed-size 64M")
            }
        }
    }

    func run() throws {
        let options = try MountOptions(o)
        let mountpoint = absolutePath(arguments.last!)
        let sources = FeedSources.absolute(Array(arguments.dropLast()))
        // The daemon's parent checked it (before making its log there).
        let chosen = cacheDir ?? options.cacheDirectory ?? defaultCacheDirectory()
        let cacheDirectory = daemonChild ? absolutePath(chosen) : try CacheDirectoryChoice.resolve(chosen)
        let daemonOptions = options.daemon
        if !daemonChild {
            do {
                try MountPreflight.check(
                    mountpoint: mountpoint, allowNonEmpty: daemonOptions.nonempty, fuseOptions: options.fuseOptions)
            } catch {
                Console.error("podfs: \(error)\n")
                throw ExitCode(1)
            }
        }
        let level = debug || daemonOptions.debug ? .debug : logLevel.flatMap(DaemonOptions.level) ?? daemonOptions.logLevel ?? .info
        let logPath = logFile ?? daemonOptions.logFile
        let toSyslog = syslog || daemonOptions.syslog || logPath == "syslog"
        if foreground || debug || daemonChild {
            let service = MountService(
                sources: sources, mountpoint: mountpoint, cacheDirectory: cacheDirectory,
                fuseOptions: options.fuseOptions,
                feedLimit: Int(try (maxFeedSize ?? options.maxFeedSize).map { try CacheSize($0).bytes ?? 0 } ?? 64 << 20),
                allowPrivate: allowPrivate || options.allowPrivate,
                commitInterval: commitInterval ?? daemonOptions.commitInterval ?? 1,
                revalidateAfter: revalidateAfter ?? daemonOptions.revalidateAfter ?? 3600,
                refreshInterval: try (refresh ?? options.refresh).map { try RefreshInterval($0).seconds }
                    ?? RefreshInterval.defaultSeconds,
                cacheSize: try (cacheSize ?? options.cacheSize).map { try CacheSize($0) }, logLevel: level, readiness: daemonChild ? .pipe : .none,
                logToSyslog: daemonChild && toSyslog, readAheadKiB: daemonOptions.readAheadKiB ?? 128,
                proxy: options.proxy, userAgent: options.userAgent ?? PodfsVersion.userAgent,
                keepLatest: keepLatest ?? options.keepLatest ?? 0,
                sync: options.sync.map {
                    MountService.Sync(
                        url: $0, passwordFile: options.syncPasswordFile.map(absolutePath),
                        device: options.syncDevice ?? SyncEndpoint.deviceID(hostName: ProcessInfo.processInfo.hostName))
                })
            throw ExitCode(service.run())
        }
        try Daemon.start(
            arguments: CommandLine.arguments, cacheDirectory: cacheDirectory,
            logFile: toSyslog ? nil : logPath.map(absolutePath) ?? (cacheDirectory + "/podfs.log"), mountpoint: mountpoint,
            typedMountpoint: arguments.last!)
    }
}

/// `$XDG_CACHE_HOME/podfs`, else `~/.cache/podfs`.
func defaultCacheDirectory() -> String {
    if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
        return xdg + "/podfs"
    }
    return NSHomeDirectory() + "/.cache/podfs"
}

/// An absolute, tilde-expanded, standardised path.
func absolutePath(_ path: String) -> String {
    let expanded = (path as NSString).expandingTildeInPath
    if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
    return ((FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(expanded) as NSString)
        .standardizingPath
}
