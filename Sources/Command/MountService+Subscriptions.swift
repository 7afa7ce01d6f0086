import FUSEBridge
import Feeds
import Foundation
import HTTPClient
import Logging
import PodFS

/// The mount's subscriptions, changed while it runs: the control socket
/// that `podfs subscribe` and `unsubscribe` talk to, and the watch on the
/// list file (docs/DESIGN.md, "Subscriptions").
extension MountService {
    /// Starts answering the control socket and watching the list. A socket
    /// that cannot be made leaves the mount serving, with the reason in
    /// the log: the list file's watch still sees edits.
    func startSubscriptions(
        _ parts: Parts, _ feeds: Feeds, logger: Logger
    ) -> (live: LiveSubscriptions, server: ControlServer?, sync: SyncLoop?) {
        let (catalog, cacheDirectory) = (parts.catalog, cacheDirectory)
        let live = LiveSubscriptions(
            list: parts.list, refresher: feeds.refresher, loader: parts.loader, source: parts.source,
            catalog: catalog, reader: parts.reader, index: parts.index, directory: cacheDirectory, logger: logger,
            saveShowList: { ShowList.write(catalog.placeholdersToSave, directory: cacheDirectory, logger: logger) },
            changed: { [keeper = parts.keeper] in keeper.poke() })
        live.startWatching()
        let syncLoop = parts.syncServer.map { server in
            SyncLoop(
                server: server, serverZone: { server.serverZone }, live: live, cacheDirectory: cacheDirectory,
                account: server.account.key,
                // What earlier versions keyed a state by: it named no user.
                legacyAccount: "\(FeedURL.redacted(sync?.url ?? "", for: .log)) \(sync?.device ?? "")",
                shownServer: server.account.shown, device: sync?.device ?? "",
                interval: refreshInterval, logger: logger)
        }
        if let syncLoop {
            live.observeLocalChanges { syncLoop.changedLocally($0, $1) }
            syncLoop.start()
        }
        do {
            let server = try ControlServer(cacheDirectory: cacheDirectory, logger: logger) { live.handle($0) }
            server.start()
            return (live, server, syncLoop)
        } catch {
            logger.error(
                "podfs subscribe and unsubscribe cannot reach this mount; edit the list instead",
                metadata: ["error": "\(error)", "list": "\(parts.list.path)"])
            return (live, nil, syncLoop)
        }
    }

    /// The sync server's client, made before the mount (a password file
    /// others can read, a URL with no user: the mount fails and says so).
    func makeSyncClient(client: HTTPClient, logger: Logger) throws -> SyncClient? {
        guard let sync else { return nil }
        do {
            return try SyncClient(
                url: sync.url, device: sync.device, passwordFile: sync.passwordFile, client: client, logger: logger)
        } catch {
            throw MountError("-o sync: \(error.message)")
        }
    }
}
