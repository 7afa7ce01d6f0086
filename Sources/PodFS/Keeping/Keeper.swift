import Foundation
public import FUSEBridge
import Locking
public import Logging
public import RangeCache
import ReadRules

/// Keeps the newest N episodes of each show, the pinned ones and every
/// show's cover complete offline (docs/DESIGN.md, "Offline by policy"), on
/// a thread of its own.
///
/// After the feeds load, after each refresh and each change of a setting,
/// it plans (`KeepPlan`), keeps the plan's files from eviction, and
/// completes them two at a time, pins first, then newest first, then the
/// covers: it opens a file as a reader would and fills its gaps
/// (`EpisodeReader.fillNext`). Its downloads give way to readers: while a
/// reader's fetch of another episode is on its way, and for `quiet`
/// seconds after, it closes its file, which stops its fill where the bytes
/// have come (`ForegroundLoad`); it opens it again and fills on from there
/// once the readers are done. Beside them, its `Sizer` asks origins for the
/// sizes feeds leave out.
public final class Keeper: Sendable {
    // MARK: - Nested types

    struct Progress {
        var report: Report?
        /// The downloads in progress, by key: `nil` until its first note.
        var downloads: [String: Report.Download?] = [:]
        /// Keys that could not be completed, and when to try again.
        var failedUntil: [String: Double] = [:]
        /// Keys said not to fit, so the log says it once.
        var reportedUnfit: Set<String> = []
        var plan: KeepPlan?
        /// The pins and Ns `plan` was made with.
        var planSettings: KeepSettings?
        /// Downloads whose file is open now: a reader that opens one of
        /// them makes the others give way.
        var openByKeeper: [String: Episode] = [:]
        /// Other users' refusals are logged once as a warning.
        var refusalLogged = false
        /// Covers whose failure was said: once a mount, then at debug level.
        var failureSaid: Set<String> = []
    }

    // MARK: - Properties

    /// The report's file name in the cache directory.
    public static let reportFile = "keeping.json"

    let catalog: Catalog
    let reader: EpisodeReader
    private let index: CacheIndex
    let logger: Logger
    /// The mount's N (`-o keep_latest`).
    public let mountLatest: Int
    let cap: Int64?
    let reportPath: String?
    /// Seconds without a reader's fetch before downloads go on.
    let quiet: Double
    let settings: Locked<KeepSettings>
    let progress = Locked(Progress())
    private let stopping = Locked(false)
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let started = Locked(false)
    /// Serialises the setters (a fit check and its save) and the report's
    /// writes.
    private let changing = Locked(0)
    /// When the report was last written, and whether a change was held
    /// back since (at most one write a second).
    let writing = Locked<(last: Double, heldBack: Bool)>((-.infinity, false))
    /// Kept keys of the last mount (its report), kept from eviction until
    /// their shows are built and planned again: covers apart, so that a
    /// mount that kept only covers (the default) struck them off by each
    /// show's cover, not by every key of every show.
    private let seed: (keys: Set<String>, covers: Set<String>)
    /// Episodes completed at once: a round trip of one (its open, its
    /// fill's first byte) overlaps the other's bytes.
    private let workers = 2
    /// Covers fetched at once (they come after the episodes): each is a
    /// round trip and a few hundred KB, so a thousand shows' covers two at
    /// a time wait on round trips, not on bytes.
    private let coverWorkers = 8
    /// Asks origins for the sizes feeds leave out, beside the downloads.
    private let sizer: Sizer

    // MARK: - Init

    /// - Parameters:
    ///   - reportPath: where to write the `Report` as JSON, or `nil`.
    public init(
        catalog: Catalog, reader: EpisodeReader, index: CacheIndex, mountLatest: Int, reportPath: String?,
        logger: Logger, quiet: Double = 1
    ) {
        self.catalog = catalog
        self.reader = reader
        self.index = index
        self.mountLatest = mountLatest
        self.cap = reader.tuning.cacheLimit
        self.reportPath = reportPath
        self.logger = logger
        self.quiet = quiet
        sizer = Sizer(catalog: catalog, reader: reader, logger: logger, quiet: quiet)
        var loaded = KeepSettings()
        do {
            loaded = try index.keepSettings()
        } catch {
            logger.error("could not read what to keep offline from the cache index", metadata: ["error": "\(error)"])
        }
        settings = Locked(loaded)
        let last = Self.lastKeptKeys(reportPath: reportPath)
        seed = (last.keys.union(loaded.pinned), last.covers)
        // Before any eviction of this mount: what the last one kept, and
        // the pins, are spared until the plan says otherwise.
        reader.keep(seed.keys.union(seed.covers))
    }

    // MARK: - Methods

    /// Starts the keeper's thread.
    public func start() {
        guard !started.withLock({ let was = $0; $0 = true; return was }) else { return }
        // The plans, and the downloads it starts (they inherit the lower
        // priority).
        BackgroundPriority.startThread(named: "podfs.keeper", stackSize: 1 << 20) { [self] in
            run()
            ended.signal()
        }
        sizer.start()
    }

    /// Stops the size checks: before the HTTP client shuts down, so none
    /// is sent to fail at once.
    public func stopSizes() {
        sizer.stop()
    }

    /// The mount is stopping: no download goes on or is retried, and one
    /// cut short by the unmount is no failure to report; `stop` waits.
    public func requestStop() {
        stopping.withLock { $0 = true }
        wake.signal()
        sizer.stop()
    }

    /// Stops the thread, its download's fill where it is; waits for it.
    public func stop() {
        stopping.withLock { $0 = true }
        wake.signal()
        sizer.stop()
        guard started.withLock({ $0 }) else { return }
        ended.wait()
        // Nothing downloads once the mount is gone.
        if let plan = progress.withLock({ $0.plan }) { writeReport(plan: plan, shows: catalog.shows, force: true) }
    }

    /// Plans again soon: feeds changed.
    public func poke() {
        wake.signal()
        sizer.poke()
    }

    /// A show's N as it applies, and whether it is the show's own.
    public func latest(of show: Catalog.Show) -> (n: Int, own: Bool) {
        if let own = settings.withLock({ $0.showLatest[show.scope.keyScope] }) { return (own, true) }
        return (mountLatest, false)
    }

    /// Sets a show's own N, or (`nil`) returns it to the mount's.
    public func setLatest(_ n: Int?, of show: Catalog.Show) throws(FileSystemError) {
        try changing.withLock { _ throws(FileSystemError) in try saveLatest(n, of: show) }
        poke()
    }

    private func saveLatest(_ n: Int?, of show: Catalog.Show) throws(FileSystemError) {
        do {
            try index.setShowLatest(n, show: show.scope.keyScope)
        } catch {
            logger.error("could not save a show's keep_latest", metadata: ["show": "\(show.name)", "error": "\(error)"])
            throw .ioError
        }
        settings.withLock { $0.showLatest[show.scope.keyScope] = n }
        logger.info(
            "a show's newest episodes kept offline",
            metadata: ["show": "\(show.name)", "keep_latest": "\(n.map(String.init) ?? "the mount's (\(mountLatest))")"])
    }

    public func isPinned(_ episode: Episode) -> Bool {
        settings.withLock { $0.pinned.contains(episode.key) }
    }

    /// Pins or unpins an episode. A pin that cannot fit the cache's cap
    /// beside the other pins is refused (ENOSPC), and the log says why.
    public func setPinned(_ pinned: Bool, _ episode: Episode) throws(FileSystemError) {
        try changing.withLock { _ throws(FileSystemError) in try savePin(pinned, episode) }
        poke()
    }

    private func savePin(_ pinned: Bool, _ episode: Episode) throws(FileSystemError) {
        if pinned {
            let (already, pinnedKeys) = settings.withLock { ($0.pinned.contains(episode.key), $0.pinned) }
            if already { return }
            let pinnedBytes = catalog.shows.flatMap(\.episodes).filter { pinnedKeys.contains($0.key) }
                .reduce(Int64(0)) { $0.saturatingAdding($1.size) }
            guard KeepPlan.pinFits(size: episode.size, pinnedBytes: pinnedBytes, cap: keepRoom) else {
                logger.error(
                    "cannot pin an episode: with the other pins it would not fit the cache's cap; unpin one or raise cache_size",
                    metadata: [
                        "episode": "\(episode.name)", "episode.bytes": "\(episode.size)",
                        "pinned.bytes": "\(pinnedBytes)", "cap.bytes": "\(cap ?? -1)",
                    ])
                throw .noSpace
            }
        }
        do {
            try index.setPinned(pinned, key: episode.key)
        } catch {
            logger.error("could not save a pin", metadata: ["episode": "\(episode.name)", "error": "\(error)"])
            throw .ioError
        }
        settings.withLock { settings in
            if pinned { settings.pinned.insert(episode.key) } else { settings.pinned.remove(episode.key) }
        }
        logger.info(pinned ? "pinned an episode" : "unpinned an episode", metadata: ["episode": "\(episode.name)"])
    }

    /// Logs another user's refused change: a warning the first time, then
    /// at debug level (any user of an `allow_other` mount could fill the
    /// log).
    public func logRefusal(_ name: String, caller: UInt32, owner: UInt32) {
        let first = progress.withLock { progress in
            defer { progress.refusalLogged = true }
            return !progress.refusalLogged
        }
        logger.log(
            level: first ? .warning : .debug, "refused a change of \(name) by another user than the mount's owner",
            metadata: ["uid": "\(caller)", "owner.uid": "\(owner)"])
    }

    /// Why an episode is kept (`user.podfs.kept`): "latest", "pinned" or
    /// "no". The plan of the last pass; a change of pins or Ns since is
    /// said at once, by a plan made for the asking (the pass the change
    /// starts may not have planned yet, and a listener who just set one
    /// reads it back).
    public func keptReason(_ episode: Episode) -> String {
        if isPinned(episode) { return KeepPlan.Reason.pinned.rawValue }
        let now = settings.withLock { $0 }
        var (plan, madeWith) = progress.withLock { ($0.plan, $0.planSettings) }
        if plan != nil, madeWith != now { plan = makePlan(catalog.shows, settings: now) }
        return plan?.kept[episode.key]?.rawValue ?? "no"
    }

    /// The report as last written.
    public var report: Report? {
        progress.withLock { $0.report }
    }

    // MARK: - Private methods

    var isStopping: Bool { stopping.withLock { $0 } }

    /// What kept episodes may take: what eviction keeps the cache at (90 %
    /// of the cap); kept bytes up to the cap itself would have every pass
    /// evict everything else.
    private var keepRoom: Int64? { cap.map { $0 / 10 * 9 } }

    private func run() {
        let done = DispatchSemaphore(value: 0)
        var running = 0
        var planCost = 0.0
        while !isStopping {
            let started = monotonicSeconds()
            let shows = catalog.shows
            let madeWith = settings.withLock { $0 }
            let plan = makePlan(shows, settings: madeWith)
            publish(plan, madeWith: madeWith, shows: shows)
            planCost = monotonicSeconds() - started
            let active = Set(progress.withLock { $0.downloads.keys })
            if running < coverWorkers, let next = nextEpisode(plan, shows: shows, excluding: active),
                running < (next.episode.isEpisode ? workers : coverWorkers)
            {
                running += 1
                progress.withLock { $0.downloads[next.episode.key] = .some(nil) }
                let thread = Thread { [self] in
                    FeedRound.blockTerminationSignals()
                    complete(next.episode, show: next.show)
                    progress.withLock { _ = $0.downloads.removeValue(forKey: next.episode.key) }
                    done.signal()
                    wake.signal()
                }
                thread.name = "podfs.keeper.download"
                thread.stackSize = 1 << 20
                thread.start()
                continue
            }
            let heldBack = writing.withLock { $0.heldBack }
            _ = wake.wait(timeout: .now() + (heldBack ? 1 : 30))
            settle(after: started, planCost: planCost)
            while done.wait(timeout: .now()) == .success { running -= 1 }
        }
        while running > 0 {
            done.wait()
            running -= 1
        }
    }

    /// Waits, after a wake, until `planShare` of the time since the last
    /// plan `started` went to planning (at most `longestSettle`): a mount
    /// that builds a thousand shows pokes the keeper at each, and a plan
    /// of every episode at every poke took a core from the builds (53 % of
    /// the daemon's CPU until every show was listed, bench/many-feeds.sh).
    /// The pokes meanwhile are one plan. A plan of a small library takes
    /// milliseconds, and so does this wait.
    private func settle(after started: Double, planCost: Double) {
        let deadline = started + min(planCost / Self.planShare, Self.longestSettle)
        while !isStopping {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { return }
            _ = wake.wait(timeout: .now() + left)
        }
    }

    /// The share of its time the keeper's planning may take while feeds
    /// keep changing.
    static let planShare = 0.2
    /// The longest a wake waits for the next plan.
    static let longestSettle = 2.0

    /// The plan for the shows as they are now, with these pins and Ns.
    private func makePlan(_ shows: [Catalog.Show], settings: KeepSettings) -> KeepPlan {
        // A show none of whose episodes can be kept (no latest, nothing
        // pinned: the default) gives the plan no episodes, only its cover;
        // a thousand shows' 200,000 episodes were sorted at every plan for
        // nothing.
        let candidates = shows.map { show in
            let identity = show.scope.keyScope
            let wanted = (settings.showLatest[identity] ?? mountLatest) > 0 || !settings.pinned.isEmpty
            return KeepPlan.Show(
                identity: identity,
                episodes: wanted
                    ? show.episodes.map { KeepPlan.Candidate(key: $0.key, date: $0.modificationTime, size: $0.size) }
                    : [],
                cover: show.cover.map { KeepPlan.Candidate(key: $0.key, date: $0.modificationTime, size: $0.size) })
        }
        return KeepPlan(
            shows: candidates, mountLatest: mountLatest, settings: settings, cap: keepRoom)
    }

    /// Keeps the plan's episodes (and their transcripts and chapters) from
    /// eviction, says once which do not fit, and writes the report.
    private func publish(_ plan: KeepPlan, madeWith: KeepSettings, shows: [Catalog.Show]) {
        var keys = Set(plan.kept.keys)
        if plan.keepsEpisodes {
            for show in shows {
                for episode in show.episodes where plan.kept[episode.key] != nil {
                    keys.formUnion(Self.companions(of: episode, in: show).map(\.key))
                }
            }
        }
        // What the last mount kept of shows not built yet stays kept: their
        // plan comes when they are (`KeepPlan.stillSpared`).
        let showsLeftToBuild =
            !(seed.keys.isEmpty && seed.covers.isEmpty) && !catalog.placeholderURLs.isEmpty
        keys.formUnion(
            KeepPlan.stillSpared(lastKept: seed.keys, showsLeftToBuild: showsLeftToBuild, builtShows: shows) { show in
                [show.episodes, show.extras].joined().lazy.map(\.key)
            })
        keys.formUnion(
            KeepPlan.stillSpared(lastKept: seed.covers, showsLeftToBuild: showsLeftToBuild, builtShows: shows) { show in
                show.cover.map { [$0.key] } ?? []
            })
        reader.keep(keys)
        let newlyUnfit = progress.withLock { progress in
            progress.plan = plan
            progress.planSettings = madeWith
            let new = plan.unfit.filter { !progress.reportedUnfit.contains($0) }
            progress.reportedUnfit = Set(plan.unfit)
            return new
        }
        let unfit = Set(newlyUnfit)
        let unfitCovers = unfit.isEmpty ? [] : shows.filter { $0.cover.map { unfit.contains($0.key) } ?? false }
        if !unfitCovers.isEmpty {
            logger.notice(
                "shows' covers do not fit the cache's cap beside the kept episodes and are not kept; raise cache_size",
                metadata: [
                    "covers": "\(unfitCovers.count)",
                    "shows": "\(unfitCovers.prefix(5).map(\.name).joined(separator: "; "))",
                ])
        }
        let names =
            unfit.count == unfitCovers.count ? [] : shows.flatMap(\.episodes).filter { unfit.contains($0.key) }.map(\.name)
        if !names.isEmpty {
            logger.warning(
                "episodes to keep offline do not fit the cache's cap and are not kept; raise cache_size or keep fewer",
                metadata: [
                    "episodes": "\(names.count)", "names": "\(names.prefix(5).joined(separator: "; "))",
                    "kept.bytes": "\(plan.keptBytes)", "cap.bytes": "\(cap ?? -1)",
                ])
        }
        writeReport(plan: plan, shows: shows)
    }

    /// The keys kept from eviction now, the covers' apart (the report's).
    func keptKeysByKind(_ plan: KeepPlan) -> (keys: Set<String>, covers: Set<String>) {
        var keys = reader.keptKeys
        let covers = keys.filter { plan.kept[$0] == .cover || seed.covers.contains($0) }
        keys.subtract(covers)
        return (keys, covers)
    }

    /// The first episode of the plan's order not yet complete (nor failed
    /// a moment ago), with its show.
    private func nextEpisode(
        _ plan: KeepPlan, shows: [Catalog.Show], excluding active: Set<String>
    ) -> (episode: Episode, show: Catalog.Show)? {
        var byKey: [String: (Episode, Catalog.Show)] = [:]
        for show in shows {
            // A thousand shows keeping only covers: no walk of their episodes.
            if plan.keepsEpisodes {
                for episode in show.episodes where plan.kept[episode.key] != nil { byKey[episode.key] = (episode, show) }
            }
            if let cover = show.cover, plan.kept[cover.key] != nil { byKey[cover.key] = (cover, show) }
        }
        let now = monotonicSeconds()
        let failed = progress.withLock { $0.failedUntil.filter { $0.value > now } }
        for key in plan.order {
            guard let (episode, show) = byKey[key] else { continue }
            for file in [episode] + Self.companions(of: episode, in: show)
            where failed[file.key] == nil && !active.contains(file.key) {
                if !reader.fillProgress(file).holdsAll { return (file, show) }
            }
        }
        return nil
    }

    /// The transcripts and chapters that go with `episode`: extras of its
    /// show published with it whose names begin with its name's stem.
    static func companions(of episode: Episode, in show: Catalog.Show) -> [Episode] {
        guard episode.isEpisode else { return [] }
        let stem = episode.name.split(separator: ".", omittingEmptySubsequences: false).dropLast().joined(separator: ".")
        guard !stem.isEmpty else { return [] }
        return show.extras.filter { $0.modificationTime == episode.modificationTime && $0.name.hasPrefix(stem + ".") }
    }
}
