import ArgumentParser
import Feeds
import Foundation
import HTTPClient
import Logging
import PodFS
import RangeCache

/// `podfs subscribe SOURCE...`: adds shows to the running mount of a cache,
/// or to the list its next mount reads.
struct Subscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add shows: to the running mount at once, else to the list the next mount reads.",
        discussion: """
            SOURCE is a feed URL, a show's web page (its <link rel="alternate" \
            type="application/rss+xml"> is followed), an OPML file or a file with one feed URL \
            per line. Each feed is fetched first: a SOURCE that is no feed and links none, a 404 \
            or a feed that does not parse adds nothing, and the command says why and exits 1. \
            On a running mount the show's folder is listed when the command returns; open files \
            and the cache are untouched. The list is the mount's SOURCE file when it was one file, \
            else <cache-dir>/subscriptions.txt.
            """)

    @Option(name: .long, help: "The cache of the mount to change (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(
        name: .long,
        help: "With no mount running: let a page's feed link lead to any address, as a mount with --allow-private does.")
    var allowPrivate = false

    @Argument(help: "Feed URLs, show web pages, OPML files or URL list files.")
    var sources: [String]

    func validate() throws {
        guard !sources.isEmpty else {
            throw ValidationError("give a feed URL, e.g. podfs subscribe https://example.org/feed.xml")
        }
    }

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        let urls: [String]
        do {
            urls = try FeedSources.urls(FeedSources.absolute(sources))
        } catch {
            SubscriptionCommand.fail(error.message)
        }
        let request = ControlSocket.Request(command: "subscribe", arguments: urls)
        if try SubscriptionCommand.sendToMount(request, cacheDirectory: directory) { return }
        // No mount: fetched here, written to the list the next mount reads.
        guard urls.count <= SubscriptionResolver.mostAtOnce else { SubscriptionCommand.fail(SubscriptionCommand.tooMany(urls.count)) }
        let found = SubscriptionCommand.withClient(allowPrivate: allowPrivate) { source in
            let resolver = SubscriptionResolver(load: { SubscriptionCommand.load($0, source: source) }) {
                source.page(url: $0, issuer: $1)
            }
            return resolver.resolveAll(urls)
        }
        var feeds: [SubscriptionResolver.Found] = []
        for result in found {
            switch result {
            case .success(let feed): feeds.append(feed)
            case .failure(let failure): SubscriptionCommand.fail(failure.description + "; nothing was added")
            }
        }
        let list = SubscriptionList.current(cacheDirectory: directory)
        let issuers = Dictionary(feeds.map { ($0.url, $0.pageZone) }, uniquingKeysWith: { _, last in last })
        // A first subscribe, before any mount: the cache is made here.
        let made = CachePrivacy.makeDirectory(directory)
        if made != 0 {
            SubscriptionCommand.fail(
                "cannot create the cache directory \(directory): \(String(cString: strerror(made))); nothing was added. "
                    + "Give one you can write with --cache-dir DIR")
        }
        if let problem = FeedIssuers.record(issuers, directory: directory) {
            SubscriptionCommand.fail("\(problem); nothing was added")
        }
        for feed in feeds {
            let title = TerminalText.clean(feed.feed.title ?? feed.url)
            // Listed already in another spelling: the list's.
            let url = list.listed(feed.url) ?? feed.url
            let shown = FeedURL.redacted(url, for: .display)
            do {
                let added = try list.add(url: url, title: feed.feed.title)
                print(added ? "subscribed: \(title) (\(shown)); the next mount lists it" : "already subscribed: \(title) (\(shown))")
            } catch {
                SubscriptionCommand.fail("\(error)")
            }
        }
    }
}

/// `podfs unsubscribe FEED...`.
struct Unsubscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove shows: from the running mount at once, else from the list the next mount reads.",
        discussion: """
            FEED is a feed URL or a show's folder name, as 'podfs subscriptions' lists them. The \
            folder leaves the listing at once; a file open in it reads on to its end. Its cached \
            bytes become ordinary cache, evicted by the usual rule; --purge deletes them now \
            (except those of a file still open).
            """)

    @Option(name: .long, help: "The cache of the mount to change (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(name: .long, help: "Delete the show's cached bytes now.")
    var purge = false

    @Argument(help: "Feed URLs or show folder names.")
    var feeds: [String]

    func validate() throws {
        guard !feeds.isEmpty else {
            throw ValidationError("give a feed URL or a show's name, e.g. podfs unsubscribe 'Some Show'")
        }
    }

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        let request = ControlSocket.Request(command: "unsubscribe", arguments: feeds, purge: purge)
        if try SubscriptionCommand.sendToMount(request, cacheDirectory: directory) { return }
        let list = SubscriptionList.current(cacheDirectory: directory)
        let listed: [String]
        do {
            listed = try list.urls()
        } catch {
            SubscriptionCommand.fail("\(error)")
        }
        let titles = list.titles()
        let names = SubscriptionMatch.names(
            shows: Dictionary(
                ShowList.read(directory: directory).map { ($0.name, $0.url) }, uniquingKeysWith: { first, _ in first }),
            titles: titles)
        var urls: [String] = []
        for feed in feeds {
            guard let url = SubscriptionMatch.url(of: feed, among: listed, names: names) else {
                SubscriptionCommand.fail("no subscription is \(feed); podfs subscriptions lists them. Nothing was removed")
            }
            urls.append(url)
        }
        for url in urls {
            do {
                _ = try list.remove(url: url)
            } catch {
                SubscriptionCommand.fail("\(error)")
            }
            let name = names.first { $0.value == url }?.key ?? titles[url]
            print("unsubscribed: \(name.map { TerminalText.clean($0) } ?? FeedURL.redacted(url, for: .display))")
        }
        if purge { try Self.purge(urls, directory: directory) }
    }

    /// Deletes the cached bytes of the feeds at `urls` (no mount uses the
    /// cache: `cache clear`'s way).
    private static func purge(_ urls: [String], directory: String) throws {
        try CacheCommand.withCache(directory: directory, command: "unsubscribe --purge") { index, maintenance, logger in
            let snapshot: [FeedSnapshot]
            do {
                snapshot = try index.snapshot()
            } catch {
                CacheCommand.fail("could not read the cache index: \(error)")
            }
            let report = CacheReport(directory: directory, snapshot: snapshot, logger: logger)
            let keys = Set(report.feeds.filter { urls.contains($0.fullURL) }.flatMap { $0.episodes.map(\.key) })
            guard !keys.isEmpty else { return }
            do {
                let result = try maintenance.clear(keys: keys, sparing: [])
                print("deleted \(result.files) cache files (\(CacheMaintenance.bytes(result.freedBytes)) on disk)")
            } catch {
                CacheCommand.fail("could not delete the cached bytes: \(error); nothing the index lists was deleted")
            }
        }
    }
}

/// `podfs subscriptions [--opml]`.
struct Subscriptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the subscriptions of a cache: each show's title, feed URL and state.",
        discussion: """
            Works with or without a running mount. --opml writes an OPML 2.0 document that \
            AntennaPod, gPodder, Pocket Casts and other podcast apps import.
            """)

    @Option(name: .long, help: "The cache whose list to show (default: $XDG_CACHE_HOME/podfs, else ~/.cache/podfs).")
    var cacheDir: String?

    @Flag(name: .long, help: "Print OPML 2.0 instead of a table.")
    var opml = false

    func run() throws {
        let directory = try CacheDirectoryChoice.resolve(cacheDir ?? defaultCacheDirectory())
        let list = SubscriptionList.current(cacheDirectory: directory)
        let urls: [String]
        do {
            urls = try list.urls()
        } catch {
            SubscriptionCommand.fail("\(error)")
        }
        // A show subscribed while no mount ran has no folder yet: the
        // title its list gives it (`subscribe` writes it there) stands in.
        var names = list.titles().merging(
            ShowList.read(directory: directory).map { ($0.url, $0.name) }, uniquingKeysWith: { _, folder in folder })
        // A running mount knows the folders of shows it added since.
        let request = ControlSocket.Request(command: "names", arguments: [])
        for line in (try? ControlSocket.send(request, cacheDirectory: directory))?.lines ?? [] {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            if parts.count == 2 { names[parts[0]] = parts[1] }
        }
        if opml {
            let outlines = urls.map { (title: names[$0] ?? $0, url: $0) }
            Console.out(Data(OPMLWriter.document(title: "podfs subscriptions", outlines: outlines)))
            return
        }
        let records = FeedStatusStore(directory: directory).records
        print("\(urls.count) subscription\(urls.count == 1 ? "" : "s") in \(list.path)")
        if let sync = SyncLoop.lastReport(directory: directory) { print(SyncLoop.describe(sync)) }
        for url in urls {
            let title = TerminalText.clean(names[url] ?? "(not loaded yet)")
            print("\(title)\n  \(TerminalText.clean(FeedURL.redacted(url, for: .display)))\n  \(Self.state(records[url]))")
        }
    }

    private static func state(_ record: FeedStatusStore.Record?) -> String {
        guard let record else { return "not fetched yet" }
        let when = Date(timeIntervalSince1970: Double(record.checkedAt)).formatted(.iso8601)
        let detail = TerminalText.clean(record.detail)
        if record.pending == true { return "loading (last check \(when): \(record.ok ? "ok" : detail))" }
        return record.ok ? "ok: \(detail) (\(when))" : "failed: \(detail) (\(when))"
    }
}

/// What the subscription commands share.
enum SubscriptionCommand {
    /// Sends `request` to the mount of `cacheDirectory` and prints its
    /// answer; false when no mount runs there. Exits 1 when the mount
    /// refused.
    static func sendToMount(_ request: ControlSocket.Request, cacheDirectory: String) throws -> Bool {
        let response: ControlSocket.Response?
        do {
            response = try ControlSocket.send(request, cacheDirectory: cacheDirectory)
        } catch {
            fail("\(error)")
        }
        guard let response else { return false }
        for line in response.lines where response.ok { print(TerminalText.clean(line)) }
        guard response.ok else { fail(response.lines.joined(separator: "\n")) }
        return true
    }

    /// Runs `body` with a feed fetcher of the command's own.
    static func withClient<Result>(allowPrivate: Bool, _ body: (CurlSource) -> Result) -> Result {
        let policy = AddressPolicy(allowPrivate: allowPrivate)
        var logger = Logger(label: "podfs")
        logger.logLevel = .error
        let client = HTTPClient(logger: logger, userAgent: PodfsVersion.userAgent, policy: policy, proxy: nil)
        defer { client.shutdown() }
        return body(CurlSource(client: client, feedLimit: 64 << 20, zones: FeedZones(policy: policy)))
    }

    static func load(_ url: String, source: CurlSource) -> SubscriptionResolver.Loaded {
        let body: [UInt8]
        do {
            body = try source.fetchFeed(url: url)
        } catch {
            return .failed(reason: "the feed could not be fetched: \(error.message)")
        }
        do {
            return .feed(try FeedParser.parse(body, baseURL: url))
        } catch {
            return .notAFeed(reason: "\(FeedLoader.doesNotParse): \(error.message)")
        }
    }

    static func tooMany(_ count: Int) -> String {
        "\(count) feeds at once is more than podfs subscribe takes (\(SubscriptionResolver.mostAtOnce)); "
            + "nothing was added. Split the list, or mount it as a SOURCE"
    }

    static func fail(_ message: String) -> Never {
        let clean = message.split(separator: "\n", omittingEmptySubsequences: false)
            .map { TerminalText.clean(String($0)) }.joined(separator: "\n")
        Console.error("podfs: \(clean)\n")
        Foundation.exit(1)
    }
}
