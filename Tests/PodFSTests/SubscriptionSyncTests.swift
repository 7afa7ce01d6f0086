import Testing

@testable import PodFS
@testable import ReadRules

/// The sync rules, driven event by event with no server.
@Suite struct SubscriptionSyncTests {
    private let a = "https://a.example/feed.xml"
    private let b = "https://b.example/feed.xml"
    private let c = "https://c.example/feed.xml"

    /// A sync that has synced once, at `timestamp`.
    private func synced(at timestamp: Int64 = 100) -> SubscriptionSync {
        var sync = SubscriptionSync()
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [], remove: [], timestamp: timestamp), local: [])
        return sync
    }

    @Test func theFirstSyncMergesBothListsAndPushesWhatTheServerLacks() {
        var sync = SubscriptionSync()
        #expect(sync.roundStarted() == .pull(since: 0))
        let outcome = sync.pulled(ServerChanges(add: [a, b], remove: [c], timestamp: 50), local: [b, c])
        // Nothing local is removed on the first sync, even what the server
        // once removed.
        #expect(outcome.local == SubscriptionSync.LocalEdit(add: [a]))
        #expect(outcome.next == .push(SubscriptionSync.PushBatch(add: [c], remove: [])))
        #expect(sync.timestamp == 50)
        let done = sync.pushed(PushReceipt(timestamp: 60), local: [a, b, c])
        #expect(done.next == nil && sync.phase == .idle && sync.pending.isEmpty)
        // The pull's timestamp stays: a push's would skip the phone's
        // changes made between the two.
        #expect(sync.timestamp == 50)
    }

    @Test func laterPullsApplyAddsAndRemoves() {
        var sync = synced()
        // Since a second before the last stamp (100): `roundStarted`.
        #expect(sync.roundStarted() == .pull(since: 99))
        #expect(sync.roundStarted() == nil)
        let outcome = sync.pulled(ServerChanges(add: [c, a], remove: [b], timestamp: 120), local: [a, b])
        #expect(outcome.local == SubscriptionSync.LocalEdit(remove: [b], add: [c]))
        #expect(outcome.next == nil && sync.phase == .idle && sync.timestamp == 120)
    }

    @Test func aChangeInTheSecondOfThePullIsAskedForAgainAndAppliedOnce() {
        var sync = synced()
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 120), local: [a, b])
        // Another device adds c within second 120, after that pull.
        #expect(sync.roundStarted() == .pull(since: 119), "second 120 is asked again")
        let first = sync.pulled(ServerChanges(add: [c], remove: [], timestamp: 121), local: [a, b])
        #expect(first.local.add == [c])
        // The next pull hands c back once more: nothing to do.
        _ = sync.roundStarted()
        let again = sync.pulled(ServerChanges(add: [c], remove: [], timestamp: 121), local: [a, b, c])
        #expect(again.local.isEmpty)
    }

    @Test func aLocalChangeMadeDuringThePullWinsAndIsPushed() {
        var sync = synced()
        _ = sync.roundStarted()
        // While the pull is in flight the listener adds b and removes a;
        // the answer, written before, says the opposite.
        sync.changedLocally(.add, b)
        sync.changedLocally(.remove, a)
        let outcome = sync.pulled(ServerChanges(add: [a], remove: [b], timestamp: 130), local: [b])
        #expect(outcome.local.isEmpty)
        #expect(outcome.next == .push(SubscriptionSync.PushBatch(add: [b], remove: [a])))
    }

    @Test func aLocalChangeMadeDuringThePushIsKeptAndPushedNext() {
        var sync = synced()
        sync.changedLocally(.add, a)
        _ = sync.roundStarted()
        let first = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 110), local: [a])
        #expect(first.next == .push(SubscriptionSync.PushBatch(add: [a], remove: [])))
        sync.changedLocally(.remove, a)
        sync.changedLocally(.add, b)
        let second = sync.pushed(PushReceipt(timestamp: 111), local: [b])
        #expect(second.next == .push(SubscriptionSync.PushBatch(add: [b], remove: [a])))
        _ = sync.pushed(PushReceipt(timestamp: 112), local: [b])
        #expect(sync.pending.isEmpty && sync.phase == .idle)
    }

    @Test func aFailedRoundLosesNothing() {
        var sync = synced()
        sync.changedLocally(.add, a)
        _ = sync.roundStarted()
        sync.failed()
        #expect(sync.pending.adds == [a] && sync.timestamp == 100)
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 140), local: [a])
        sync.failed()  // the push failed
        #expect(sync.pending.adds == [a] && sync.phase == .idle)
        // A late answer after the failure is ignored.
        #expect(sync.pushed(PushReceipt(timestamp: 1), local: [a]).refusal == .unexpected)
        #expect(sync.pending.adds == [a])
    }

    @Test func aURLInBothListsStaysSubscribed() {
        var sync = synced()
        _ = sync.roundStarted()
        let outcome = sync.pulled(ServerChanges(add: [a], remove: [a, b], timestamp: 150), local: [a, b])
        #expect(outcome.local == SubscriptionSync.LocalEdit(remove: [b]))
        var fresh = synced()
        _ = fresh.roundStarted()
        #expect(fresh.pulled(ServerChanges(add: [c], remove: [c], timestamp: 150), local: []).local.add == [c])
    }

    @Test func anAnswerThatWouldOverfillTheListIsRefusedWhole() {
        var sync = SubscriptionSync(timestamp: 100, limits: SyncLimits(maxSubscriptions: 2))
        _ = sync.roundStarted()
        let outcome = sync.pulled(ServerChanges(add: [b, c], remove: [], timestamp: 160), local: [a])
        #expect(outcome.refusal == .tooManySubscriptions(3))
        #expect(outcome.local.isEmpty && outcome.next == nil)
        #expect(sync.timestamp == 100 && sync.phase == .idle)
    }

    /// gpodder.net renames a URL it cleans up (`update_urls`): the list
    /// keeps the listener's (the show keeps its folder, cache and pins),
    /// what the server later says of its URL is read as said of the
    /// listener's, and a removal goes out in both.
    @Test func aRenameKeepsTheListenersURLAndReadsTheServersAsIt() {
        var sync = synced()
        sync.changedLocally(.add, a)
        sync.changedLocally(.add, b)
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 170), local: [a, b, c])
        let clean = "https://a.example/clean.xml"
        let receipt = PushReceipt(timestamp: 171, renames: [.init(from: a, to: clean), .init(from: b, to: c)])
        let outcome = sync.pushed(receipt, local: [a, b, c])
        // Already listed under the server's URL: one is enough.
        #expect(outcome.local == SubscriptionSync.LocalEdit(remove: [b]))
        #expect(sync.aliases == [clean: a])
        // The server hands its URL back: nothing to add.
        _ = sync.roundStarted()
        let back = sync.pulled(ServerChanges(add: [clean], remove: [], timestamp: 180), local: [a, c])
        #expect(back.local.isEmpty && back.next == nil)
        // The listener unsubscribes: both URLs leave the server.
        sync.changedLocally(.remove, a)
        _ = sync.roundStarted()
        let push = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 181), local: [c])
        #expect(push.next == .push(.init(add: [], remove: [a, clean])))
        _ = sync.pushed(PushReceipt(timestamp: 182), local: [c])
        #expect(sync.aliases.isEmpty)
        // Another device's removal of the server's URL removes the listener's.
        var other = synced()
        other.changedLocally(.add, a)
        _ = other.roundStarted()
        _ = other.pulled(ServerChanges(add: [], remove: [], timestamp: 170), local: [a])
        _ = other.pushed(PushReceipt(timestamp: 171, renames: [.init(from: a, to: clean)]), local: [a])
        _ = other.roundStarted()
        #expect(other.pulled(ServerChanges(add: [], remove: [clean], timestamp: 190), local: [a]).local.remove == [a])
    }

    /// A server that matches URLs as written (Nextcloud) keeps a feed the
    /// phone listed as `feed://…` unless its removal says `feed://…` too:
    /// a removal goes out in podfs's spelling and the server's.
    @Test func aRemovalReachesTheServerInItsOwnSpelling() {
        var sync = synced()
        _ = sync.roundStarted()
        let spelled = "feed://c.example/feed.xml"
        _ = sync.pulled(ServerChanges(add: [c], remove: [], timestamp: 180, spellings: [c: spelled]), local: [a, b])
        #expect(sync.serverSpellings == [c: spelled])
        sync.changedLocally(.remove, c)
        sync.changedLocally(.remove, a)
        _ = sync.roundStarted()
        let outcome = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 181), local: [b])
        #expect(outcome.next == .push(.init(add: [], remove: [c, a, spelled])))
        _ = sync.pushed(PushReceipt(timestamp: 182), local: [b])
        #expect(sync.serverSpellings.isEmpty && sync.pending.isEmpty)
        // The server listing it in podfs's spelling later forgets its own.
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [a], remove: [], timestamp: 190, spellings: [a: "HTTPS://a.example/feed.xml"]), local: [b])
        _ = sync.roundStarted()
        _ = sync.pulled(ServerChanges(add: [a], remove: [], timestamp: 191), local: [a, b])
        #expect(sync.serverSpellings.isEmpty)
    }

    /// A renamed feed that left the list frees the server's URL: the
    /// listener subscribing it later gets a feed of its own, not the old
    /// one back; a URL renamed twice is removed in both names; a feed
    /// subscribed under an alias's URL is not removed with the aliased one.
    @Test func aliasesNameOnlyFeedsStillListed() {
        let clean = "https://a.example/clean.xml"
        let cleaner = "https://a.example/cleaner.xml"
        func renamed(_ renames: [PushReceipt.Rename]) -> SubscriptionSync {
            var sync = synced()
            sync.changedLocally(.add, a)
            _ = sync.roundStarted()
            _ = sync.pulled(ServerChanges(add: [], remove: [], timestamp: 170), local: [a])
            _ = sync.pushed(PushReceipt(timestamp: 171, renames: renames), local: [a])
            return sync
        }
        // The phone removes the server's URL: the alias goes with the feed.
        var sync = renamed([.init(from: a, to: clean)])
        _ = sync.roundStarted()
        #expect(sync.pulled(ServerChanges(add: [], remove: [clean], timestamp: 180), local: [a]).local.remove == [a])
        #expect(sync.aliases.isEmpty)
        sync.changedLocally(.add, clean)
        _ = sync.roundStarted()
        let own = sync.pulled(ServerChanges(add: [clean], remove: [], timestamp: 190), local: [clean])
        #expect(own.local.isEmpty, "the server's echo of the new subscription adds nothing: \(own.local)")
        // Renamed twice: removed in both names.
        var twice = renamed([.init(from: a, to: clean)])
        twice.changedLocally(.add, b)
        _ = twice.roundStarted()
        _ = twice.pulled(ServerChanges(add: [], remove: [], timestamp: 180), local: [a, b])
        _ = twice.pushed(PushReceipt(timestamp: 181, renames: [.init(from: a, to: cleaner)]), local: [a, b])
        #expect(twice.aliases == [clean: a, cleaner: a])
        twice.changedLocally(.remove, a)
        _ = twice.roundStarted()
        let push = twice.pulled(ServerChanges(add: [], remove: [], timestamp: 190), local: [b])
        #expect(push.next == .push(.init(add: [], remove: [a, clean, cleaner])))
        // The listener subscribes the server's URL itself: it is no alias.
        var both = renamed([.init(from: a, to: clean)])
        both.changedLocally(.add, clean)
        #expect(both.aliases.isEmpty)
        both.changedLocally(.remove, a)
        _ = both.roundStarted()
        let removal = both.pulled(ServerChanges(add: [], remove: [], timestamp: 190), local: [clean])
        #expect(removal.next == .push(.init(add: [clean], remove: [a])))
    }

    @Test func pendingChangesKeepTheLatestIntentOnly() {
        var pending = PendingChanges(adds: [a, b], removes: [b])
        #expect(pending.adds == [a] && pending.removes == [b])
        pending.record(.remove, a)
        pending.record(.add, a)
        #expect(pending.urls == [b, a] && pending.intent(for: a) == .add)
    }
}
