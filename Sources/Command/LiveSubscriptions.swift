import Feeds
import Foundation
import HTTPClient
import Locking
import Logging
import PodFS
import RangeCache

/// A running mount's subscriptions: `podfs subscribe` and `unsubscribe`
/// through the control socket, and edits of the list file by hand or by
/// another program, each applied to the catalogue with no remount
/// (docs/DESIGN.md, "Subscriptions").
///
/// One change at a time (`changing`): a command and the watcher never
/// interleave their edits of the list and the catalogue. A new show's
/// folder is in the root when its command returns; an unsubscribed one
/// leaves it at once, while files open in it read on.
final class LiveSubscriptions: Sendable {
    // MARK: - Properties

    /// How often the list file is looked at for edits, in seconds: an edit
    /// is applied at the second look that finds it unchanged.
    static let watchInterval = 0.4

    private let list: SubscriptionList
    private let refresher: FeedRefresher
    private let loader: FeedLoader
    private let source: CurlSource
    private let catalog: Catalog
    private let reader: EpisodeReader
    private let index: CacheIndex
    /// The cache directory (`FeedIssuers`).
    private let directory: String
    private let logger: Logger
    /// Saves what the next mount lists at once (`ShowList`).
    private let saveShowList: @Sendable () -> Void
    /// Told after shows came or went (the keeper plans again).
    private let changed: @Sendable () -> Void
    /// Held for the whole of one change of the subscriptions. (An `Int`,
    /// not `()`: ThreadSanitizer takes the accesses of an empty value for
    /// a race; `Catalog.updating` does the same.)
    private let changing = Locked(0)
    /// The list file's signature when last read (`SubscriptionList
    /// .signature`). Guarded by `changing`'s lock in practice; its own
    /// lock keeps the compiler's promise.
    private let seen: Locked<[Int]>
    /// The signature at the last look: an edit is applied once it has held
    /// still for one look (a file being written is not read half-way).
    private let lastLook = Locked<[Int]?>(nil)
    /// Told each change the listener made (the sync pushes it).
    private let localChange = Locked<(@Sendable (PendingChanges.Intent, String) -> Void)?>(nil)
    private let stopping = Locked(false)
    private let ended = DispatchSemaphore(value: 0)

    // MARK: - Init

    init(
        list: SubscriptionList, refresher: FeedRefresher, loader: FeedLoader, source: CurlSource, catalog: Catalog,
        reader: EpisodeReader, index: CacheIndex, directory: String, logger: Logger, saveShowList: @escaping @Sendable () -> Void,
        changed: @escaping @Sendable () -> Void
    ) {
        self.changed = changed
        self.list = list
        self.refresher = refresher
        self.loader = loader
        self.source = source
        self.catalog = catalog
        self.reader = reader
        self.index = index
        self.directory = directory
        self.logger = logger
        self.saveShowList = saveShowList
        // Nothing seen yet: the first look compares the list with what the
        // mount subscribed, so an edit made while it started is applied.
        seen = Locked([])
    }

    // MARK: - Methods

    /// Answers one request of the control socket.
    func handle(_ request: ControlSocket.Request) -> ControlSocket.Response {
        changing.withLock { _ in
            guard !stopping.withLock({ $0 }) else {
                return ControlSocket.Response(ok: false, lines: ["the mount is being unmounted; nothing was changed"])
            }
            switch request.command {
            case "subscribe": return subscribe(request.arguments)
            case "unsubscribe": return unsubscribe(request.arguments, purge: request.purge)
            case "names":
                // Built or listed and not built yet: every folder of the root.
                return ControlSocket.Response(
                    ok: true, lines: catalog.placeholdersToSave.map { "\($0.url)\t\($0.name)" })
            default: return ControlSocket.Response(ok: false, lines: ["unknown request '\(request.command)'"])
            }
        }
    }

    /// The subscribed feeds now.
    var subscribedURLs: [String] { refresher.subscribedURLs }

    /// Tells `observer` each change the listener makes from now on (under
    /// this type's lock).
    func observeLocalChanges(_ observer: @escaping @Sendable (PendingChanges.Intent, String) -> Void) {
        localChange.withLock { $0 = observer }
    }

    /// Applies what a sync server's answer leads to: `decide` is given the
    /// list as it is now and returns the rules' outcome, under this type's
    /// lock, so no command or edit comes in between. Feeds the server adds
    /// are fetched under its `zone`; a feed that fails is listed when it
    /// loads, as at mount. Nothing here counts as the listener's change.
    func applyFromServer(
        zone: AddressZone?, _ decide: ([String]) -> SubscriptionSync.Outcome
    ) -> SubscriptionSync.Outcome {
        changing.withLock { _ in
            let outcome = decide(refresher.subscribedURLs)
            let edit = outcome.local
            guard !edit.isEmpty, !stopping.withLock({ $0 }) else { return outcome }
            let (removed, added) = (edit.remove, edit.add)
            for url in removed {
                do {
                    _ = try list.remove(url: url)
                } catch {
                    logger.warning("could not take a feed the sync server removed out of the list", metadata: ["error": "\(error)"])
                }
                refresher.unsubscribe(url: url)
            }
            noteIssuers(Dictionary(added.map { ($0, zone ?? .global) }, uniquingKeysWith: { _, last in last }))
            for url in added {
                source.zones.feedListed(url: url, byServerIn: zone ?? .global)
                do {
                    _ = try list.add(url: url, title: nil)
                } catch {
                    logger.warning("could not add a feed the sync server listed to the list", metadata: ["error": "\(error)"])
                }
            }
            refresher.add(urls: added)
            seen.withLock { $0 = list.signature() }
            saveShowList()
            changed()
            return outcome
        }
    }

    /// Starts looking at the list file for edits made by hand or by other
    /// programs: an editor's save (a new file renamed over the old one)
    /// and an in-place write are both seen within `watchInterval`.
    func startWatching() {
        let thread = Thread { [self] in
            FeedRound.blockTerminationSignals()
            while !stopping.withLock({ $0 }) {
                usleep(UInt32(Self.watchInterval * 1_000_000))
                changing.withLock { _ in followEdits() }
            }
            ended.signal()
        }
        thread.name = "podfs-list-watch"
        thread.start()
    }

    /// Stops the watch and waits for a change under way (a subscription's
    /// fetch ends within the feed timeouts); later requests are refused.
    func stop() {
        stopping.withLock { $0 = true }
        ended.wait()
        changing.withLock { _ in }
    }

    // MARK: - Private methods

    private func subscribe(_ sources: [String]) -> ControlSocket.Response {
        guard sources.count <= SubscriptionResolver.mostAtOnce else {
            return ControlSocket.Response(ok: false, lines: [SubscriptionCommand.tooMany(sources.count)])
        }
        let resolver = SubscriptionResolver(load: { [self] in load($0) }, fetch: { [source] in source.page(url: $0, issuer: $1) })
        var found: [SubscriptionResolver.Found] = []
        // Nothing is added unless every SOURCE gives a feed.
        for result in resolver.resolveAll(sources) {
            switch result {
            case .success(let feed): found.append(feed)
            case .failure(let failure): return ControlSocket.Response(ok: false, lines: [failure.description])
            }
        }
        var lines: [String] = []
        // A feed listed already in another spelling is the list's, whose
        // show it is.
        for index in found.indices { found[index].url = list.listed(found[index].url) ?? found[index].url }
        // A feed a page linked is fetched under that page's zone, in this
        // mount and the next ones; one the user named again is the user's.
        for entry in found { source.zones.feedListed(url: entry.url, byServerIn: entry.pageZone) }
        noteIssuers(Dictionary(found.map { ($0.url, $0.pageZone) }, uniquingKeysWith: { _, last in last }))
        for entry in found {
            let shown = FeedURL.redacted(entry.url, for: .display)
            do {
                // The list first: a feed the list cannot take is not added.
                let listed = try list.add(url: entry.url, title: entry.feed.title)
                let change: Catalog.Change?
                do {
                    change = try refresher.subscribe(url: entry.url, feed: entry.feed)
                } catch {
                    if listed { _ = try? list.remove(url: entry.url) }
                    throw error
                }
                if listed { tell(.add, entry.url) }
                let name = change?.showName ?? catalog.folderName(url: entry.url) ?? entry.feed.title ?? shown
                lines.append(change == nil ? "already subscribed: \(name) (\(shown))" : "subscribed: \(name) (\(shown))")
            } catch {
                return ControlSocket.Response(ok: false, lines: lines + ["\(shown): \(error)"])
            }
        }
        seen.withLock { $0 = list.signature() }
        saveShowList()
        changed()
        return ControlSocket.Response(ok: true, lines: lines)
    }

    private func unsubscribe(_ feeds: [String], purge: Bool) -> ControlSocket.Response {
        let subscribed = refresher.subscribedURLs
        var urls: [String] = []
        let names = SubscriptionMatch.names(shows: catalog.feedURLsByShowName(), titles: list.titles())
        for feed in feeds {
            guard let url = SubscriptionMatch.url(of: feed, among: subscribed, names: names) else {
                return ControlSocket.Response(
                    ok: false, lines: ["no subscription is \(feed); podfs subscriptions lists them"])
            }
            urls.append(url)
        }
        var lines: [String] = []
        for url in urls {
            // The list first: a feed the list cannot lose stays subscribed.
            do {
                _ = try list.remove(url: url)
            } catch {
                return ControlSocket.Response(ok: false, lines: lines + ["\(error)"])
            }
            let removal = refresher.unsubscribe(url: url)
            tell(.remove, url)
            var line = "unsubscribed: \(removal?.name ?? FeedURL.redacted(url, for: .display))"
            if purge {
                // From the index, not the folder: a show only listed from
                // the last mount, or one that never loaded, has no files
                // built, and its bytes are still there.
                let keys = ((try? index.snapshot()) ?? []).filter { $0.url == url }.flatMap { $0.episodes.map(\.key) }
                let (purged, open) = reader.purge(keys: keys)
                line += "; deleted the cached bytes of \(purged) file(s)"
                if open > 0 { line += ", \(open) open or downloading kept until closed (ordinary cache)" }
            }
            lines.append(line)
        }
        seen.withLock { $0 = list.signature() }
        saveShowList()
        changed()
        return ControlSocket.Response(ok: true, lines: lines)
    }

    /// Remembers who named these feeds for the next mounts (`FeedIssuers`).
    private func noteIssuers(_ feeds: [String: AddressZone?]) {
        if let problem = FeedIssuers.record(feeds, directory: directory) {
            logger.warning(
                "could not remember which server named a feed; the next mount fetches it as yours",
                metadata: ["error": "\(problem)"])
        }
    }

    private func tell(_ intent: PendingChanges.Intent, _ url: String) {
        localChange.withLock { $0 }?(intent, url)
    }

    /// Applies an edit of the list file made outside podfs: feeds added
    /// are fetched and listed (one that fails is listed when it loads, as
    /// at mount), feeds removed leave the root.
    private func followEdits() {
        let signature = list.signature()
        let previous = lastLook.withLock { look in
            defer { look = signature }
            return look
        }
        guard signature != seen.withLock({ $0 }), signature == previous else { return }
        seen.withLock { $0 = signature }
        let wanted: [String]
        do {
            wanted = try list.urls()
        } catch {
            logger.warning("the subscription list does not read; keeping the current subscriptions", metadata: ["error": "\(error)"])
            return
        }
        let current = refresher.subscribedURLs
        // Sets: a thousand subscriptions were a million comparisons.
        let (wantedSet, currentSet) = (Set(wanted), Set(current))
        let removed = current.filter { !wantedSet.contains($0) }
        let added = wanted.filter { !currentSet.contains($0) }
        guard !removed.isEmpty || !added.isEmpty else { return }
        logger.info(
            "the subscription list changed", metadata: ["feeds.added": "\(added.count)", "feeds.removed": "\(removed.count)"])
        for url in removed {
            refresher.unsubscribe(url: url)
            tell(.remove, url)
        }
        for url in added { tell(.add, url) }
        refresher.add(urls: added)
        saveShowList()
        changed()
    }

    /// A feed loaded and kept as a mount keeps its feeds.
    private func load(_ url: String) -> SubscriptionResolver.Loaded {
        switch loader.refresh(url: url, conditional: false) {
        case .updated(let feed, _): return .feed(feed)
        case .notModified: return loader.kept(url: url).map { .feed($0) } ?? .failed(reason: "the feed gave nothing new")
        case .failed(let reason, _, _):
            return reason.hasPrefix(FeedLoader.doesNotParse) ? .notAFeed(reason: reason) : .failed(reason: reason)
        }
    }
}
