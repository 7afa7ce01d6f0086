public import Feeds
import Foundation
import RangeCache

/// Refreshed shows, and shows subscribed while mounted: each laid out on its
/// caller's thread, then put in the tree in batches (`GroupCommit`) under
/// `updating`, the files new to the index registered in one transaction a
/// batch.
///
/// A registration's cost is mostly the pages of the episodes' key index it
/// changes (keys are hashes, so each new episode lands on a page of its
/// own) and each commit writes every page it changed to the write-ahead
/// log; a thousand shows landing together were a thousand transactions,
/// one after the other under `updating`, and every show's listing waited
/// for the ones before it.
extension Catalog {
    // MARK: - Nested types

    /// A feed laid out and waiting to be put in the tree.
    struct Update: Sendable {
        var url: String
        var feed: ParsedFeed
        /// The show as it was when the layout was made, and the name it
        /// was made for.
        var before: Show?
        var provisional: String
        var scope: CacheScope
        var layout: ShowLayout {
            didSet { playlist = layout.playlist() }
        }
        /// The layout's playlist, made with it before the batch (it walks
        /// every title) rather than while the batch holds `updating`.
        private(set) var playlist: [UInt8]

        init(url: String, feed: ParsedFeed, before: Show?, provisional: String, scope: CacheScope, layout: ShowLayout) {
            self.url = url
            self.feed = feed
            self.before = before
            self.provisional = provisional
            self.scope = scope
            self.layout = layout
            self.playlist = layout.playlist()
        }
    }

    /// An update ready to register: its name, what it replaces, and which
    /// of its files the tree already has.
    private struct Prepared {
        var update: Update
        var name: String
        var previous: Show?
        var placeholder: Placeholder?
        var reused: [String: Episode]
        var missing: [ShowLayout.Item]
    }

    // MARK: - Refresh

    /// Replaces the listing of the feed at `url` with `feed` (or adds its
    /// directory when it had none). Files still in the feed keep their
    /// names, inodes and state; new ones are registered in the index.
    /// Returns what changed, for the kernel's caches and the reader.
    public func update(url: String, feed: ParsedFeed) throws -> Change {
        // The layout (names for every file) is the costly part: it is made
        // before the batch, so feeds that land together lay out in
        // parallel. Only one round fetches a feed at a time, so the show's
        // previous names cannot change meanwhile; a new show's name can
        // (another show may take it), and then the layout is made again.
        let (before, provisional) = tree.withLock { tree in
            (tree.showsByURL[url], Naming.sanitize(feed.title))
        }
        // A show keeps its scope for the mount: its files' keys are what the
        // reader and open files use (a feed that gains a guid is moved to
        // it by the next mount).
        let scope = before?.scope ?? scope(url: url, feed: feed)
        let layout = ShowLayout(
            scope: scope, feed: feed, directoryName: before?.name ?? provisional,
            previousNames: before?.names ?? [:], logger: logger)
        let update = Update(
            url: url, feed: feed, before: before, provisional: provisional, scope: scope, layout: layout)
        return try updates.submit(update, key: url) { batch in apply(batch) }
    }

    /// Batches of updates carried out so far (tests).
    var updateBatches: Int { updates.batches }

    /// Updates submitted and not answered yet (tests).
    var updatesUnanswered: Int { updates.unanswered }

    // MARK: - Private methods

    /// Puts a batch of updates in the tree (no two of one feed): names,
    /// one registration, one install. If the batch's registration fails,
    /// each update registers alone, so a failure is only its own.
    private func apply(_ batch: [Update]) -> [Result<Change, any Error>] {
        updating.withLock { _ in
            var namesTaken = Set<String>()
            let prepared = batch.map { prepare($0, namesTaken: &namesTaken) }
            let registered: [Result<(feedID: Int64, records: [EpisodeRecord]), any Error>]
            do {
                registered = try index.register(
                    feeds: prepared.map { item in
                        (feedURL: item.update.url, episodes: item.missing.map { (key: $0.key, url: $0.url) })
                    },
                    formerKeys: Self.formerKeys(prepared.flatMap(\.missing))
                ).map { .success($0) }
            } catch {
                registered = prepared.map { item in
                    Result {
                        try index.register(
                            feedURL: item.update.url, episodes: item.missing.map { (key: $0.key, url: $0.url) },
                            formerKeys: Self.formerKeys(item.missing))
                    }
                }
            }
            let built = zip(prepared, registered).map { item, registration in
                registration.map { build(item, registration: $0) }
            }
            // Installed in one hold of the tree's lock, in batch order.
            return tree.withLock { tree in
                for item in prepared where tree.beingBuilt[item.update.url] == item.name {
                    tree.beingBuilt[item.update.url] = nil
                }
                return zip(prepared, built).map { item, built in
                    built.map { show, newFiles, renewed, deferred in
                        var change = install(item, show: show, newFiles: newFiles, renewed: renewed, into: &tree)
                        change.renewalsDeferred = deferred
                        return change
                    }
                }
            }
        }
    }

    /// The name of the update's show, what it replaces, and its files the
    /// tree has; its layout made again if its name or the show it replaces
    /// changed since it was made. `namesTaken`: names given to new shows
    /// earlier in the batch (not in the tree yet).
    private func prepare(_ update: Update, namesTaken: inout Set<String>) -> Prepared {
        var update = update
        let (previous, placeholder) = tree.withLock { tree in
            (tree.showsByURL[update.url], tree.placeholders[update.url])
        }
        let name: String
        if let previous {
            name = previous.name
        } else if let placeholder {
            name = placeholder.name
        } else {
            // A show new to the root: a name no show, placeholder or show
            // new in this batch has, kept from shows listed on arrival
            // (`listArrived`, which does not wait for `updating`) until it
            // is installed. The tree's indexes are asked, not a set
            // of every name made again for each new show (a thousand shows:
            // half a million names copied under the lock the listings take).
            let stem = Naming.sanitize(update.feed.title)
            name = tree.withLock { tree in
                let name = Naming.uniqueName(stem: stem, suffix: "") { [namesTaken] candidate in
                    namesTaken.contains(candidate) || tree.isNameTaken(candidate)
                }
                tree.beingBuilt[update.url] = name
                return name
            }
            namesTaken.insert(name)
        }
        // Another update of the feed may have landed meanwhile (a
        // subscription while a round refreshes it): its names count.
        if name != (update.before?.name ?? update.provisional) || previous !== update.before {
            update.layout = ShowLayout(
                scope: previous?.scope ?? update.scope, feed: update.feed, directoryName: name,
                previousNames: previous?.names ?? [:], logger: logger)
        }
        let files = update.layout.files
        // Every file's lookup under one hold of the tree's lock: a hold per
        // file met the listings' holds, and each handover put the
        // registering thread behind the one it woke.
        let reused = tree.withLock { tree in
            var found: [String: Episode] = [:]
            for file in files {
                if let episode = tree.filesByKey[file.key] { found[file.key] = episode }
            }
            return found
        }
        return Prepared(
            update: update, name: name, previous: previous, placeholder: placeholder, reused: reused,
            missing: files.filter { reused[$0.key] == nil })
    }

    /// The show of a prepared update, its new files registered.
    private func build(
        _ item: Prepared, registration: (feedID: Int64, records: [EpisodeRecord])
    ) -> (Show, newFiles: [Episode], renewed: [Renewal], deferred: Bool) {
        let shownBefore =
            item.previous.map { (time: $0.modificationTime, listing: Optional($0.listing)) }
            ?? item.placeholder.map { (time: $0.modificationTime, listing: $0.listing) }
        return Self.makeShow(
            url: item.update.url, feed: item.update.feed, layout: item.update.layout,
            playlist: item.update.playlist, name: item.name, previous: item.previous, shownBefore: shownBefore,
            reused: item.reused, registered: registration)
    }

    /// Puts a built show in the tree and says what changed.
    private func install(
        _ item: Prepared, show: Show, newFiles: [Episode], renewed: [Renewal], into tree: inout Tree
    ) -> Change {
        let previous = item.previous
        let latest = tree.latest
        if previous == nil, item.placeholder == nil { tree.rootChangedAt = Self.wallClock() }
        tree.removed.remove(item.update.url)
        Self.install(show, replacing: previous, into: &tree)
        let latestChanged = tree.latest !== latest
        let before = Set(previous?.byName.keys.map { $0 } ?? [])
        let after = Set(show.byName.keys)
        return Change(
            showInode: show.inode, showName: show.name, isNewShow: previous == nil,
            addedNames: after.subtracting(before).sorted(), removedNames: before.subtracting(after).sorted(),
            playlistChanged: previous.map { $0.playlist !== show.playlist || $0.modificationTime != show.modificationTime }
                ?? true,
            playlistInode: show.playlist.inode, newFiles: newFiles, renewed: renewed, latestChanged: latestChanged)
    }
}
