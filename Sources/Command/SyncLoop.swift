import Foundation
import HTTPClient
import Locking
import Logging
import PodFS
import RangeCache

/// Syncs a mount's subscriptions with a gpodder-API server, beside the feed
/// refresh (docs/DESIGN.md, "Subscriptions"): a round at mount, one every
/// refresh interval, and one soon after a local change, so `podfs
/// subscribe` reaches the phone within seconds.
///
/// The rules are `SubscriptionSync`'s; this carries them out. What it must
/// not lose (the server's timestamp, changes not yet pushed, the list as
/// last synced) is saved in `<cache-dir>/sync-state.json` after every
/// event, so a crash or an unmount loses nothing, and a change made with no
/// mount running (an edit of the list) is pushed by the next one. A server
/// that refuses or is down changes nothing locally; `sync-status.json` (for
/// `podfs status`) and the log say why, without the password.
final class SyncLoop: Sendable {
    // MARK: - Nested types

    /// What is saved between mounts.
    struct Saved: Codable, Equatable {
        /// The server and device it belongs to (another one starts afresh).
        var account: String
        var timestamp: Int64?
        var pendingAdds: [String] = []
        var pendingRemoves: [String] = []
        /// The list when it last matched the server's.
        var listAtLastSync: [String]?
        /// `SubscriptionSync.serverSpellings` (absent in older states).
        var serverSpellings: [String: String]?
        /// `SubscriptionSync.aliases` (absent in older states).
        var aliases: [String: String]?
    }

    /// The last round's outcome, for `podfs status`.
    struct Report: Codable, Equatable {
        var server: String
        var device: String
        var ok: Bool
        var detail: String
        var checkedAt: Int64
    }

    // MARK: - Properties

    static let stateFile = "sync-state.json"
    static let statusFile = "sync-status.json"

    private let server: any SyncServer
    /// The zone of the server's address (`SyncClient.serverZone`): the
    /// feeds it lists are fetched under it.
    private let serverZone: @Sendable () -> AddressZone?
    private let live: LiveSubscriptions
    private let directory: String
    private let account: String
    private let shownServer: String
    private let device: String
    private let interval: Double?
    private let logger: Logger
    /// The rules' state. Taken under `LiveSubscriptions.changing` when an
    /// answer is applied (that lock first).
    private let state: Locked<SubscriptionSync>
    /// The list when it last matched the server's (`Saved.listAtLastSync`);
    /// its lock also serialises writing the state file, and is taken before
    /// `state`'s.
    private let synced: Locked<[String]?>
    /// What `SyncDevices.hint` said of the account's devices and when it
    /// was asked (after the first round that went through; a `nil` hint:
    /// nothing to say, and nothing is asked again this mount).
    private let devicesHint = Locked<(hint: String?, at: Date)?>(nil)
    private let stopping = Locked(false)
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    // MARK: - Init

    /// Restores what the last mount saved for this account; changes made to
    /// the list since then become local changes to push.
    init(
        server: any SyncServer, serverZone: @escaping @Sendable () -> AddressZone?, live: LiveSubscriptions,
        cacheDirectory: String, account: String, legacyAccount: String? = nil, shownServer: String, device: String,
        interval: Double?, logger: Logger
    ) {
        self.server = server
        self.serverZone = serverZone
        self.live = live
        directory = cacheDirectory
        self.account = account
        self.shownServer = shownServer
        self.device = device
        self.interval = interval
        self.logger = logger
        // A state saved under the old key (which named no user) is this
        // account's once: it is saved under the new key from then on.
        let saved = Self.load(directory: cacheDirectory).flatMap {
            $0.account == account || (legacyAccount != nil && $0.account == legacyAccount) ? $0 : nil
        }
        var sync = SubscriptionSync(
            timestamp: saved?.timestamp,
            pending: PendingChanges(adds: saved?.pendingAdds ?? [], removes: saved?.pendingRemoves ?? []),
            serverSpellings: saved?.serverSpellings ?? [:], aliases: saved?.aliases ?? [:])
        if let before = saved?.listAtLastSync {
            let now = live.subscribedURLs
            for url in now where !before.contains(url) { sync.changedLocally(.add, url) }
            for url in before where !now.contains(url) { sync.changedLocally(.remove, url) }
        }
        state = Locked(sync)
        synced = Locked(saved?.listAtLastSync)
    }

    // MARK: - Methods

    /// A local change (a command, an edit of the list): pushed soon.
    /// Called under `LiveSubscriptions.changing`.
    func changedLocally(_ intent: PendingChanges.Intent, _ url: String) {
        state.withLock { $0.changedLocally(intent, url) }
        save()
        wake.signal()
    }

    func start() {
        let thread = Thread { [self] in
            FeedRound.blockTerminationSignals()
            while !stopping.withLock({ $0 }) {
                round()
                // A local change wakes it early; a burst of them is pushed
                // together, a second later.
                let woke = wake.wait(timeout: .now() + (interval ?? 365 * 86_400)) == .success
                if woke { usleep(1_000_000) }
                while wake.wait(timeout: .now()) == .success {}
            }
            ended.signal()
        }
        thread.name = "podfs-sync"
        thread.start()
        logger.info("syncing subscriptions", metadata: ["sync.server": "\(shownServer)", "sync.device": "\(device)"])
    }

    /// Ends the loop; a request under way ends when its transfer does (shut
    /// the HTTP client down to cut it short).
    func requestStop() {
        stopping.withLock { $0 = true }
        wake.signal()
    }

    func waitUntilStopped() {
        ended.wait()
    }

    // MARK: - Private methods

    /// One round: a pull, its changes applied, then pushes until nothing is
    /// pending.
    private func round() {
        var next = state.withLock { $0.roundStarted() }
        var applied = (added: 0, removed: 0, pushed: 0)
        while let action = next, !stopping.withLock({ $0 }) {
            do {
                let outcome: SubscriptionSync.Outcome
                switch action {
                case .pull(let since):
                    let changes = try server.pull(since: since)
                    outcome = live.applyFromServer(zone: serverZone()) { local in
                        state.withLock { $0.pulled(changes, local: local) }
                    }
                case .push(let batch):
                    let receipt = try server.push(batch)
                    // The listener's changes it carried (not the server's
                    // spellings and aliases sent with a removal).
                    let before = state.withLock { $0.pending.urls.count }
                    outcome = live.applyFromServer(zone: serverZone()) { local in
                        state.withLock { $0.pushed(receipt, local: local) }
                    }
                    applied.pushed += max(0, before - state.withLock { $0.pending.urls.count })
                }
                if case .tooManySubscriptions(let count) = outcome.refusal {
                    let listed = live.subscribedURLs.count
                    let most = SyncLimits().maxSubscriptions
                    throw SyncError(
                        .badAnswer,
                        listed > most
                            ? "this mount lists \(listed) feeds, more than sync takes (\(most)); nothing was synced, "
                                + "and sync waits until the list is shorter"
                            : "the sync server's changes would make the list \(count) subscriptions, more than podfs "
                                + "takes (\(most)); nothing was changed")
                }
                applied.added += outcome.local.add.count
                applied.removed += outcome.local.remove.count
                next = outcome.next
                save(listed: next == nil)
            } catch {
                state.withLock { $0.failed() }
                save()
                let message = (error as? SyncError)?.message ?? "\(error)"
                logger.warning(
                    "subscription sync failed; the subscriptions stay as they are",
                    metadata: ["sync.server": "\(shownServer)", "reason": "\(message)"])
                // What this mount changed is kept and sent when it can be.
                let waiting = state.withLock { $0.pending.urls.count }
                let kept = waiting == 0 ? "" : "; \(waiting) local change\(waiting == 1 ? " waits" : "s wait") to be sent"
                report(ok: false, detail: message + kept)
                return
            }
        }
        if applied != (0, 0, 0) {
            logger.info(
                "subscriptions synced",
                metadata: [
                    "feeds.added": "\(applied.added)", "feeds.removed": "\(applied.removed)",
                    "changes.pushed": "\(applied.pushed)",
                ])
        }
        let hint = checkDevices()
        report(
            ok: true,
            detail: "in sync (this round: \(applied.added) added, \(applied.removed) removed, "
                + "\(applied.pushed) change(s) sent)" + (hint.map { "; but \($0)" } ?? ""))
    }

    /// The hint about devices whose lists this one does not share: asked
    /// of the server after the first round that goes through, and while
    /// there is one, again every ten minutes (the listener may have linked
    /// the devices meanwhile).
    private func checkDevices() -> String? {
        let known = devicesHint.withLock { $0 }
        if let known, known.hint == nil || Date().timeIntervalSince(known.at) < 600 { return known.hint }
        guard let unshared = try? server.unsharedDevices() else { return known?.hint }
        let hint = SyncDevices.hint(device: device, unshared: unshared)
        devicesHint.withLock { $0 = (hint, Date()) }
        if let hint, known?.hint != hint { logger.warning("\(hint)", metadata: ["sync.server": "\(shownServer)"]) }
        return hint
    }

    /// Saves the rules' state; with `listed`, also the list as synced.
    /// Under `synced`'s lock: a command's change and a round never write the
    /// file at once.
    private func save(listed: Bool = false) {
        synced.withLock { list in
            if listed { list = live.subscribedURLs }
            let sync = state.withLock { $0 }
            let saved = Saved(
                account: account, timestamp: sync.timestamp, pendingAdds: sync.pending.adds,
                pendingRemoves: sync.pending.removes, listAtLastSync: list,
                serverSpellings: sync.serverSpellings.isEmpty ? nil : sync.serverSpellings,
                aliases: sync.aliases.isEmpty ? nil : sync.aliases)
            guard let data = try? JSONEncoder().encode(saved) else { return }
            Self.write(data, to: directory + "/" + Self.stateFile, logger: logger)
        }
    }

    private func report(ok: Bool, detail: String) {
        let report = Report(
            server: shownServer, device: device, ok: ok, detail: detail,
            checkedAt: Int64(Date().timeIntervalSince1970))
        guard let data = try? JSONEncoder().encode(report) else { return }
        Self.write(data, to: directory + "/" + Self.statusFile, logger: logger)
    }

    private static func load(directory: String) -> Saved? {
        FileManager.default.contents(atPath: directory + "/" + stateFile)
            .flatMap { try? JSONDecoder().decode(Saved.self, from: $0) }
    }

    /// Written aside, then renamed: a reader sees one version or the next.
    private static func write(_ data: Data, to path: String, logger: Logger) {
        if let problem = CachePrivacy.replaceFile(path, Array(data)) {
            logger.warning("could not save the sync state", metadata: ["error": "\(problem)"])
        }
    }

    /// `Sync: ...`, one line for a person.
    static func describe(_ report: Report) -> String {
        let when = Date(timeIntervalSince1970: Double(report.checkedAt)).formatted(.iso8601)
        let state = report.ok ? "ok" : "failed"
        return TerminalText.clean(
            "Sync: \(state) with \(report.server) as device \(report.device) (\(when)): \(report.detail)")
    }

    /// The last round's report, for `podfs status` and `podfs
    /// subscriptions`; `nil` when this cache never synced.
    static func lastReport(directory: String) -> Report? {
        FileManager.default.contents(atPath: directory + "/" + statusFile)
            .flatMap { try? JSONDecoder().decode(Report.self, from: $0) }
    }
}
