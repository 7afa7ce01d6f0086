/// The rules of syncing one mount's subscription list with a gpodder-API
/// server: what to ask, what to apply locally, what to push. No I/O, no
/// locks; a driver applies each event under its own lock and carries out
/// what it returns.
///
/// Guarantees:
/// - A local change is kept until the server acknowledged it: a pull, a
///   refused answer or a failed push never drops one, and a change made while
///   a pull or a push is in flight is pushed in a later push.
/// - A pending local change wins over the server's answer for the same URL:
///   it reaches the server after that answer was written, so it is the
///   newer one, and the phone sees it after the push.
/// - The first sync (no timestamp yet) merges: nothing local is removed,
///   and every local feed the server lacks is pushed.
/// - A URL both in `add` and in `remove` of one answer stays subscribed:
///   the answer does not say which came last, and a show wrongly kept is one
///   `rm` away while one wrongly dropped is gone from the mount unseen.
/// - An answer that would leave more than `SyncLimits.maxSubscriptions`
///   feeds is refused whole, and the timestamp does not move.
/// - The stored timestamp is the last pull's, never a push's: a change the
///   phone made between the two lies between them and would be skipped.
///   The next pull hands podfs its own push back once, which changes
///   nothing.
public struct SubscriptionSync: Sendable, Equatable {
    // MARK: - Nested types

    /// Local changes on their way to the server.
    public struct PushBatch: Sendable, Equatable {
        public var add: [String]
        public var remove: [String]

        public init(add: [String], remove: [String]) {
            self.add = add
            self.remove = remove
        }
    }

    /// Where a sync round is.
    public enum Phase: Sendable, Equatable {
        /// No request in flight.
        case idle
        /// Asked for the changes since `since`.
        case pulling(since: Int64)
        /// Pushing `batch`; the pull before it is applied.
        case pushing(PushBatch)
    }

    /// The request the driver should make next.
    public enum Action: Sendable, Equatable {
        case pull(since: Int64)
        case push(PushBatch)
    }

    /// What the driver should do to the local list, in this order:
    /// removals, additions.
    public struct LocalEdit: Sendable, Equatable {
        public var remove: [String] = []
        public var add: [String] = []

        public init(remove: [String] = [], add: [String] = []) {
            self.remove = remove
            self.add = add
        }

        public var isEmpty: Bool { remove.isEmpty && add.isEmpty }
    }

    /// Why an answer was not applied, as a stable code.
    public enum Refusal: Sendable, Equatable {
        /// The list would grow past the bound: the count it would reach.
        case tooManySubscriptions(Int)
        /// The event came in a phase that expects no such answer (a driver
        /// bug, or a late answer after `failed()`): ignored.
        case unexpected
    }

    /// What an answer led to.
    public struct Outcome: Sendable, Equatable {
        /// Apply to the local list, under the same lock as the event.
        public var local = LocalEdit()
        /// The request to make next; `nil` ends the round.
        public var next: Action?
        /// Set when the answer was not applied at all.
        public var refusal: Refusal?

        public init(local: LocalEdit = LocalEdit(), next: Action? = nil, refusal: Refusal? = nil) {
            self.local = local
            self.next = next
            self.refusal = refusal
        }
    }

    // MARK: - Properties

    /// The last pulled server timestamp; `nil` before the first sync. Store
    /// it with `pending` after each event.
    public private(set) var timestamp: Int64?
    /// Local changes not yet acknowledged by the server.
    public private(set) var pending: PendingChanges
    /// The server's spelling of the feeds it listed in a spelling of its
    /// own (`ServerChanges.spellings`): a removal goes out in both. Store
    /// it with `pending`.
    public private(set) var serverSpellings: [String: String]
    /// The listener's URL of each feed the server renamed (`update_urls`:
    /// gpodder.net cleans URLs up), by the server's URL. The list keeps
    /// the listener's, so the show keeps its folder, cache and pins; what
    /// the server says of its URL is read as said of the listener's, and a
    /// removal goes out in both. Store it with `pending`.
    public private(set) var aliases: [String: String]
    public private(set) var phase: Phase = .idle
    public let limits: SyncLimits

    // MARK: - Init

    /// The state restored from storage (or a first sync: no timestamp, no
    /// pending changes).
    public init(
        timestamp: Int64? = nil, pending: PendingChanges = PendingChanges(), serverSpellings: [String: String] = [:],
        aliases: [String: String] = [:], limits: SyncLimits = SyncLimits()
    ) {
        self.timestamp = timestamp
        self.pending = pending
        self.serverSpellings = serverSpellings
        self.aliases = aliases
        self.limits = limits
    }

    // MARK: - Events

    /// The listener added or removed `url` (a command, or an edit of the
    /// SOURCE file), in any phase.
    public mutating func changedLocally(_ intent: PendingChanges.Intent, _ url: String) {
        pending.record(intent, url)
        // A feed subscribed under a URL the server once gave another feed
        // of the list (`aliases`) is that URL's own from now on.
        if intent == .add { aliases[url] = nil }
    }

    /// Time for a round; `nil` when one is already in flight.
    ///
    /// A pull asks for the changes since one second before the last
    /// timestamp: servers stamp changes in whole seconds and answer those
    /// stamped after `since`, so a change another device made in the same
    /// second as the last pull has that pull's stamp and would be missed.
    /// The second's changes come again; applying one twice changes nothing.
    public mutating func roundStarted() -> Action? {
        guard case .idle = phase else { return nil }
        let since = timestamp.map { max(0, $0 - 1) } ?? 0
        phase = .pulling(since: since)
        return .pull(since: since)
    }

    /// The pull's checked answer arrived; `local` is the list as it is now
    /// (not when the pull started), read under the lock the edit is applied
    /// under.
    public mutating func pulled(_ served: ServerChanges, local: [String]) -> Outcome {
        guard case .pulling = phase else { return Outcome(refusal: .unexpected) }
        let changes = listenersURLs(served)
        let firstSync = timestamp == nil
        let listed = Set(local)
        let added = Set(changes.add)
        var edit = LocalEdit()
        for url in changes.add where !listed.contains(url) && pending.intent(for: url) != .remove {
            edit.add.append(url)
        }
        if !firstSync {
            for url in changes.remove
            where listed.contains(url) && !added.contains(url) && pending.intent(for: url) != .add {
                edit.remove.append(url)
            }
        }
        let count = local.count + edit.add.count - edit.remove.count
        guard count <= limits.maxSubscriptions else {
            phase = .idle
            return Outcome(refusal: .tooManySubscriptions(count))
        }
        timestamp = changes.timestamp
        for url in changes.add { serverSpellings[url] = changes.spellings[url] }
        for url in changes.remove where !added.contains(url) { serverSpellings[url] = nil }
        // An alias whose feed left the list (by this answer, or by hand
        // before any removal to push) names nothing any more: the
        // server's URL may come back as a feed of its own. One whose
        // removal is still to be pushed stays until it is.
        let remaining = Set(local).subtracting(edit.remove)
        aliases = aliases.filter { alias in
            pending.intent(for: alias.value) == .remove
                || (remaining.contains(alias.value) && !served.remove.contains(alias.key))
        }
        if firstSync {
            for url in local where !added.contains(url) && pending.intent(for: url) == nil {
                pending.record(.add, url)
            }
        }
        return Outcome(local: edit, next: nextPush())
    }

    /// The push was acknowledged; `local` is the list as it is now.
    public mutating func pushed(_ receipt: PushReceipt, local: [String]) -> Outcome {
        guard case .pushing(let batch) = phase else { return Outcome(refusal: .unexpected) }
        pending.acknowledge(adds: batch.add, removes: batch.remove)
        // Gone from the server in every spelling; an add is in podfs's.
        for url in batch.remove + batch.add { serverSpellings[url] = nil }
        let removed = Set(batch.remove)
        aliases = aliases.filter { !removed.contains($0.key) && !removed.contains($0.value) }
        var edit = LocalEdit()
        let listed = Set(local)
        for rename in receipt.renames where listed.contains(rename.from) {
            // Already listed under the server's spelling: one is enough.
            if listed.contains(rename.to) {
                edit.remove.append(rename.from)
            } else {
                aliases[rename.to] = rename.from
            }
        }
        // Changes made while the push was in flight go out at once.
        return Outcome(local: edit, next: nextPush())
    }

    /// The request in flight failed (unreachable, refused, a garbage
    /// answer): the round ends and nothing is lost.
    public mutating func failed() {
        phase = .idle
    }

    // MARK: - Private methods

    /// `served` with each URL the server renamed read as the listener's
    /// (`aliases`), and its spellings under those URLs.
    private func listenersURLs(_ served: ServerChanges) -> ServerChanges {
        guard !aliases.isEmpty else { return served }
        var changes = served
        func local(_ urls: [String]) -> [String] {
            var seen = Set<String>()
            return urls.map { aliases[$0] ?? $0 }.filter { seen.insert($0).inserted }
        }
        changes.add = local(served.add)
        changes.remove = local(served.remove)
        changes.spellings = [:]
        for (url, spelling) in served.spellings where aliases[url] == nil { changes.spellings[url] = spelling }
        return changes
    }

    private mutating func nextPush() -> Action? {
        guard !pending.isEmpty else {
            phase = .idle
            return nil
        }
        // A feed the server listed in its own spelling, or renamed, is
        // removed in that one too: a server that matches as written keeps
        // it otherwise.
        var spelled: [String] = []
        for url in pending.removes {
            let renamed = aliases.filter { $0.value == url }.keys.sorted()
            for other in renamed + [serverSpellings[url]].compactMap({ $0 })
            where !pending.removes.contains(other) && !pending.adds.contains(other) && !spelled.contains(other) {
                spelled.append(other)
            }
        }
        let batch = PushBatch(add: pending.adds, remove: pending.removes + spelled)
        phase = .pushing(batch)
        return .push(batch)
    }
}
