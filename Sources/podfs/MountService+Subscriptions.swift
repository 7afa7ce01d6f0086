import Foundation
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
    ) -> (live: LiveSubscriptions, server: ControlServer?) {
        let (catalog, cacheDirectory) = (parts.catalog, cacheDirectory)
        let live = LiveSubscriptions(
            list: parts.list, refresher: feeds.refresher, loader: parts.loader, source: parts.source,
            catalog: catalog, reader: parts.reader, logger: logger,
            saveShowList: { ShowList.write(catalog.placeholdersToSave, directory: cacheDirectory, logger: logger) },
            changed: { [keeper = parts.keeper] in keeper.poke() })
        live.startWatching()
        do {
            let server = try ControlServer(cacheDirectory: cacheDirectory, logger: logger) { live.handle($0) }
            server.start()
            return (live, server)
        } catch {
            logger.error(
                "podfs subscribe and unsubscribe cannot reach this mount; edit the list instead",
                metadata: ["error": "\(error)", "list": "\(parts.list.path)"])
            return (live, nil)
        }
    }
}
