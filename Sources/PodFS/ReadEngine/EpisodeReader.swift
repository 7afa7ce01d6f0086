import Dispatch
public import FUSEBridge
import Foundation
public import Logging
public import RangeCache
import Locking
import Synchronization
public import ReadRules

/// Serves reads of episodes from the scratch files and fetches what is
/// missing, one fetch per byte however many readers ask.
///
/// The driver of the read path: the rules are `Episode.State`'s events
/// (`ReadRules/`); each entry point here takes the episode's lock, applies one
/// event, releases the lock and carries out the effects it returned.
///
/// Guarantees (docs/DESIGN.md): a reader is answered as soon as its bytes
/// are on disk (a reader whose short fetch is arriving, or whose bytes sit
/// in the chunk being written, is answered from memory, with the same
/// bytes); a read never waits on another episode's network; the index
/// never lists a byte that is not durably on disk (guarantee 1, see
/// `Durability`); bytes of two versions never mix (guarantee
/// 3: a changed origin bumps the episode's generation and older handles get
/// EIO).
public final class EpisodeReader: Sendable {
    // MARK: - Properties

    let index: CacheIndex
    let logger: Logger
    let tuning: Tuning
    /// Where requests go, what the way there has shown, and the
    /// listeners' fetches on it.
    let network: Network
    /// The writers of fetched bytes, the memory they and the reads use,
    /// and the count of work still queued (`drainWriters`).
    let io = ScratchIO()
    /// What the index must hear and in what order: its lock, the dirty
    /// and the stopped episodes, the flush thread and the commit.
    let durability: Durability
    /// Whether the cache's disk is full, and its reserve file.
    let disk: DiskSpace
    /// The numbers of open files, and the session told of changed sizes
    /// and pages.
    let kernel = KernelChannel()
    /// The episodes the reader met, by key, and the shows that stitch.
    let known: KnownEpisodes
    /// Keeps the cache under its cap and makes room on a full disk; knows
    /// the episodes kept by policy.
    let eviction: Eviction

    /// The mount is stopping: fetches cut short by it are no failure.
    let stopping = Atomic<Bool>(false)
    /// Episodes a refresh moved to another file while they were read, by
    /// key: their old bytes go once they are idle (`followPendingMoves`).
    let pendingMoves = Locked<[String: Episode]>([:])

    /// Readers' fetches on the network: the cache's own downloads give way
    /// to them (docs/DESIGN.md, "Offline by policy").
    public var foreground: ForegroundLoad { network.foreground }

    // MARK: - Init

    public init(index: CacheIndex, source: any RangeSource, logger: Logger, tuning: Tuning = Tuning()) {
        self.index = index
        self.known = KnownEpisodes(index: index, logger: logger)
        self.network = Network(source: source)
        self.logger = logger
        self.tuning = tuning
        self.disk = DiskSpace(directory: index.directory)
        self.durability = Durability(index: index, disk: disk, logger: logger)
        self.eviction = Eviction(
            index: index, durability: durability, episodes: known.byKey, disk: disk, limit: tuning.cacheLimit,
            logger: logger)
    }

    // MARK: - Public methods

    /// The mount is stopping (before its HTTP client is shut down): the
    /// fetches that shutdown cuts short are logged at debug level, not as
    /// failures.
    public func noteStopping() {
        stopping.store(true, ordering: .releasing)
    }

    /// Tells the reader of episodes the mount now shows: those restored
    /// with a state from the index are met (`known`); the others
    /// are met when first opened or fetched.
    public func adopt(_ episodes: [Episode]) {
        // Only a state restored from the index is made here; a state
        // restored with news for the index (ranges it could not take) is
        // committed by the next flush.
        let restored = episodes.compactMap { episode in
            episode.state.ifMade { !$0.unsaved.isEmpty }.map { (episode, unsaved: $0) }
        }
        guard !restored.isEmpty else { return }
        known.meet(restored.map(\.0))
        for (episode, unsaved) in restored where unsaved { durability.markDirty(episode) }
    }

    /// Deletes the cached bytes of `keys` now, except those of an episode
    /// open or downloading (`Eviction.purge`).
    public func purge(keys: [String]) -> (purged: Int, open: Int) {
        eviction.purge(keys: keys)
    }

    /// Evicts until the committed bytes are at most 90 % of the cap
    /// (`Eviction`). Returns the number of bytes freed.
    @discardableResult
    public func evictIfOverLimit() -> Int64 {
        eviction.keepUnderCap()
    }

    /// Starts committing dirty episodes every `interval` seconds, making
    /// room on a full disk and keeping the cache under its cap
    /// (`Durability.startFlushing`).
    public func startFlushing(interval: Double = 1.0) {
        durability.startFlushing(interval: interval, eviction: eviction) { [self] in followPendingMoves() }
    }

    /// Stops the flush thread and commits what is left. Call after the
    /// HTTP client is shut down: queued writes land first.
    public func stopFlushing() {
        drainWriters()
        durability.stopFlushing()
    }

    /// Commits every dirty episode's ranges now (`Durability.flush`).
    public func flush() {
        durability.flush()
    }

    /// Lets the reader drop the kernel's cached size and pages of an episode.
    public func attach(invalidator: any KernelCacheInvalidator) {
        kernel.attach(invalidator)
    }

    /// Forgets the session (after it closed): nothing is left to tell, and
    /// the session refers back to the reader through the file system.
    public func detachInvalidator() {
        kernel.attach(nil)
    }

    /// Opens an episode (the rules are `Episode.State.open`'s): answers at
    /// once, or when the probe's head arrives.
    public func open(_ episode: Episode, reply: any OpenReplying) {
        open(episode, reply: reply, forKeeper: false)
    }

    /// Opens an episode for a reader, or for the keeper (its probe is one
    /// of the cache's own downloads).
    func open(_ episode: Episode, reply: any OpenReplying, forKeeper: Bool) {
        known.meet(episode)
        let handle = kernel.newHandle()
        // Taken of an episode's audio that holds nothing yet
        // (`inheritStitching`), under the same lock as the open: one
        // round of the episode's lock, which is its state's first.
        let stitches = episode.isEpisode && showStitches(episode)
        let (inherited, effects) = episode.state.withLock { state in
            let inherited = stitches ? state.inheritStitching() : nil
            let effects = state.open(
                handle: handle, reply: Episode.OpenToken(reply), now: monotonicSeconds(), feedLength: episode.feedLength,
                tuning: tuning, seenByKernel: !forKeeper)
            return (inherited, effects)
        }
        if let inherited { known.stitchingShows.inherit(episode, reason: inherited) }
        carryOut(effects, of: episode, EffectContext(forKeeper: forKeeper))
    }

    /// Sends a probe's first attempt (outside the episode's lock).
    func send(
        _ probe: Episode.State.ProbeStart, of episode: Episode, background: Bool = false, forKeeper: Bool = false
    ) {
        startFetch(
            probe.id, range: probe.range, of: episode,
            to: RequestTarget(url: probe.url ?? episode.url, validator: probe.validator), background: background,
            forKeeper: forKeeper)
    }

    /// Where `episode`'s next request goes (`state` is its state, under
    /// its lock): the link its version came from, else the feed's, with
    /// the version's `If-Range` validator.
    func target(_ state: Episode.State, of episode: Episode) -> RequestTarget {
        RequestTarget(url: state.linkToAsk ?? episode.url, validator: validator(state))
    }

    /// Sends the first attempt of fetch `id` (planned by an event) of
    /// `range`, outside the episode's lock: the one way a fetch starts.
    /// Retries go through `launch` with the fetch they retry.
    func startFetch(
        _ id: UInt64, range: Range<Int64>, of episode: Episode, to target: RequestTarget, background: Bool = false,
        forKeeper: Bool = false, sizeCheck: Bool = false
    ) {
        let fetch = Fetch(
            id: id, episode: episode, reader: self, isBackground: background, forKeeper: forKeeper,
            isSizeCheck: sizeCheck)
        _ = fetch.nextAttempt()
        launch(fetch, url: target.url, range: range, validator: target.validator)
    }

    /// Runs `answer` once the episode's size is the origin's, if an open
    /// file waits for that (see `open`), else at once.
    public func whenSized(_ episode: Episode, answer: @escaping @Sendable () -> Void) {
        // A state not made has no open file (and a listing `stat`s every
        // file: it is not made for that; `Episode.StateCell`).
        if episode.state.ifMade({ $0.statWaits(Episode.SizeToken(answer)) }) != true { answer() }
    }

    /// Reads `size` bytes at `offset`; answers with fewer only at the end.
    /// The rules are `Episode.State.read`'s; this carries out its effects
    /// after the lock is released.
    public func read(_ episode: Episode, handle: UInt64, offset: Int64, size: Int, reply: any DataReplying) {
        read(episode, handle: handle, offset: offset, size: size, reply: Episode.ReadToken(reply))
    }

    /// A read event, of a FUSE read or one made again (`resume`).
    private func read(_ episode: Episode, handle: UInt64, offset: Int64, size: Int, reply: Episode.ReadToken) {
        let clock = ReadClock()
        let (effects, target, generation) = episode.state.withLock { state in
            let context = readContext(episode, state, clock)
            let effects = state.read(handle: handle, offset: offset, size: size, reply: reply, context: context)
            return (effects, self.target(state, of: episode), state.generation)
        }
        carryOut(effects, of: episode, EffectContext(target: target, generation: generation, read: (offset, size)))
    }

    /// Forgets an open file.    /// Forgets an open file.
    /// Returns where the file read (`ReadExtent`), `nil` for a handle
    /// not open.
    @discardableResult
    func release(_ episode: Episode, handle: UInt64) -> ReadExtent? {
        let now = monotonicSeconds()
        // A replaced version no file reads any more is closed here, outside
        // the lock: its file has no path, and closing it frees its blocks.
        let (extent, unread, streaming, open, closing) = episode.state.withLock { state in
            let extent = state.handles[handle]?.extent
            let unread = state.release(handle: handle, now: now)
            return (extent, unread, state.streamsUnread, state.handles.count, state.closings)
        }
        logger.debug("a file closed", metadata: ["episode.key": "\(episode.key)", "open.files": "\(open)"])
        if !unread.isEmpty {
            logger.debug(
                "the last file open on a replaced version closed; its bytes are freed",
                metadata: ["episode.key": "\(episode.key)", "versions": "\(unread.count)"])
        }
        if streaming { stopUnreadStreams(of: episode, afterClosing: closing) }
        return extent
    }

    /// After `Tuning.closeGrace`, stops the fetches of `episode` that no
    /// open file reads, unless a file was opened and closed since
    /// `closing` (`Episode.State.stopUnreadStreams`). Not waited for at
    /// shutdown: the transfers end then anyway.
    private func stopUnreadStreams(of episode: Episode, afterClosing closing: UInt64) {
        DispatchQueue.global().asyncAfter(deadline: .now() + tuning.closeGrace) { [self] in
            let ids = episode.state.withLock { $0.stopUnreadStreams(afterClosing: closing) }
            guard !ids.isEmpty else { return }
            logger.debug(
                "no open file reads the episode: its fetches stop where they are",
                metadata: ["episode.key": "\(episode.key)", "fetches": "\(ids.count)"])
            stop(ids, of: episode)
        }
    }

    // MARK: - Internal methods

    /// Starts the writers' threads now and maps the first body chunks, so
    /// the first download of a mount waits for neither (a fresh 512 KiB
    /// mapping costs 128 page faults where its bytes arrive), and reads the
    /// shows that stitch.
    public func warmUp() {
        io.warmUp()
        // The shows that stitch, read before the first open needs them (a
        // pass over the index's episodes, off the open's path).
        DispatchQueue.global(qos: .utility).async { [self] in
            known.stitchingShows.loadIfNeeded()
        }
    }

    /// Waits until every queued write and completion has run, and every
    /// retry that was waiting has started (`ScratchIO.drain`).
    func drainWriters() {
        io.drain()
    }

    /// The validator for `If-Range`: a strong ETag, else Last-Modified.
    func validator(_ state: Episode.State) -> String? {
        state.version.ifRange
    }

    /// The scratch file of the episode's version `wanted` (the current one
    /// when `nil`), opened (created sparse at full length) outside its
    /// lock if it is not open yet; `nil` while the length is unknown, when
    /// it cannot be created (reads then come from memory, see
    /// `DiskSpace`), or when that version was replaced and its
    /// bytes are not kept. A read decided on one version is never served
    /// from another's file, however the version changes meanwhile.
    func scratchFile(of episode: Episode, generation wanted: UInt64? = nil) -> ScratchFile? {
        let (open, length, cached, replacing, current) = episode.state.withLock {
            ($0.scratch, $0.length, !$0.present.isEmpty, $0.replacingScratch, $0.generation)
        }
        let wanted = wanted ?? current
        if wanted != current { return episode.state.withLock { $0.retired[wanted]?.scratch }?.file }
        if let open { return open.file }
        // The path still names a replaced version's file for a moment.
        guard let length, !replacing else { return nil }
        let path = index.dataPath(forKey: episode.key)
        // The file is gone (deleted by hand?): what the index said is not
        // on disk, so forget it rather than serve zeros.
        let missing = cached && !ScratchFile.exists(path: path)
        let made: Result<ScratchFile, FileError> = Result { () throws(FileError) in
            try ScratchFile(path: path, length: length)
        }
        let (scratch, forgot) = episode.state.withLock {
            $0.scratchOpened((try? made.get()).map(Episode.FileToken.init), generation: wanted, fileMissing: missing)
        }
        if forgot {
            logger.warning(
                "an episode's cache file is missing; its cached ranges are forgotten",
                metadata: ["episode.key": "\(episode.key)"])
            durability.markDirty(episode)
        }
        if case .failure(let error) = made { disk.writeFailed(error, episode: episode, logger: logger) }
        return scratch?.file
    }

    /// Answers what waited for the first response
    /// (`Episode.State.settle`, `Effect.resume`): the `stat`s, then the
    /// reads, made again as new read events.
    func resume(_ waiting: (reads: [Episode.EarlyRead], sized: [Episode.SizeToken]), of episode: Episode) {
        for sized in waiting.sized { sized.answer() }
        for early in waiting.reads {
            read(episode, handle: early.handle, offset: early.offset, size: early.size, reply: early.reply)
        }
    }

    /// What a read event of `episode` needs of the world now: among it,
    /// what the responses of the host its requests go to showed (the
    /// pinned link's host's own estimate once it has a round trip, else
    /// its feed host's: `LinkEstimates.estimate(feed:pinned:)`). Made under
    /// the episode's lock, which the pinned link needs; the estimates' lock
    /// is a leaf below it.
    private func readContext(
        _ episode: Episode, _ state: borrowing Episode.State, _ clock: ReadClock
    ) -> Episode.State.ReadContext {
        let feed = LinkEstimates.Host(url: episode.url)
        let pinned = state.pinnedHost
        return Episode.State.ReadContext(
            now: clock.now, wallClock: clock.wallClock,
            link: network.estimates.withLock { $0.estimate(feed: feed, pinned: pinned) }, tuning: tuning)
    }

    /// A read event's two clocks, read before the episode's lock is taken.
    private struct ReadClock {
        let now = monotonicSeconds()
        let wallClock = Int64(Date().timeIntervalSince1970)
    }

    /// Judges again, after `delay`, the reads of `episode` that jumped and
    /// wait for a fetch not their own (`Episode.State.recheckDue`). Counted
    /// with the retries, so a shutdown waits for it (`drainWriters`).
    func scheduleRecheck(of episode: Episode, after delay: Double) {
        io.afterDelay(delay) { [self] in
            let clock = ReadClock()
            let (effects, target, unstable, generation) = episode.state.withLock { state in
                let effects = state.recheckDue(context: readContext(episode, state, clock))
                return (effects, self.target(state, of: episode), state.unstable != nil, state.generation)
            }
            if effects.contains(where: { if case .fetch = $0 { true } else { false } }) {
                if unstable {
                    logger.notice(
                        """
                        the stream of an episode whose host stitches per request stalled; a second one from its \
                        start is sooner, and its variant replaces the first (files open on the first read what \
                        was cached of it)
                        """,
                        metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
                } else {
                    logger.debug(
                        "a read that waited for a stalled fetch gets a fetch of its own",
                        metadata: ["episode.key": "\(episode.key)"])
                }
            }
            carryOut(effects, of: episode, EffectContext(target: target, generation: generation))
        }
    }

    // MARK: - Private methods

    /// Sends an attempt of `fetch`, noting when (see `LinkEstimate`).
    func launch(_ fetch: Fetch, url: String, range: Range<Int64>, validator: String?) {
        // Ended once per attempt, in `fetchCompleted`.
        if !fetch.forKeeper { network.foreground.began(fetch.episode) }
        known.meet(fetch.episode)
        fetch.markSent(askedFrom: range.lowerBound)
        fetch.episode.transfers.withLock { $0[fetch.id] = fetch }
        // The feed listed the enclosure a refresh moved it to, if it did,
        // whatever `Episode` the fetch holds (its address zone is the feed's).
        let episode = fetch.episode
        let listedBy = (episode.state.ifMade({ $0.enclosureURL }) ?? nil)
            .map { ListedBy(url: $0, feedURL: episode.folder.feedURL) } ?? episode.listedBy
        fetch.attemptStarted(
            fetch.isSizeCheck
                ? network.source.start(
                    url: url, range: range, validator: validator, listedBy: listedBy, sink: fetch,
                    stalledAfter: Fetch.sizeCheckStall)
                : network.source.start(url: url, range: range, validator: validator, listedBy: listedBy, sink: fetch))
    }

    /// Stops the transfers of fetches that yielded and want nothing more.
    func stop(_ ids: [UInt64], of episode: Episode) {
        let stopping = episode.transfers.withLock { running in ids.compactMap { running[$0] } }
        for fetch in stopping { fetch.stop() }
    }

    /// A response head for `episode` arrived `seconds` after its request,
    /// from `answered` (where its redirects ended; `direct`: none was
    /// followed).
    func observe(latency seconds: Double, of episode: Episode, answered: String, direct: Bool) {
        let (feed, host) = (LinkEstimates.Host(url: episode.url), LinkEstimates.Host(url: answered))
        network.estimates.withLock { $0.observe(latency: seconds, feed: feed, answered: host, direct: direct) }
    }

    /// A response body of `bytes` for `episode` came from `answered` in
    /// `seconds` after its head.
    func observe(bytes: Int64, in seconds: Double, of episode: Episode, answered: String) {
        let (feed, host) = (LinkEstimates.Host(url: episode.url), LinkEstimates.Host(url: answered))
        guard logger.logLevel <= .trace else {
            network.estimates.withLock { $0.observe(bytes: bytes, in: seconds, feed: feed, answered: host) }
            return
        }
        // What the trace line says, read under the same lock.
        let (estimate, ofFeed) = network.estimates.withLock { links in
            links.observe(bytes: bytes, in: seconds, feed: feed, answered: host)
            return (links[host], links[feed: feed])
        }
        logger.trace(
            "link estimate",
            metadata: [
                "host": "\(LinkEstimates.host(of: answered))", "feed.host": "\(LinkEstimates.host(of: episode.url))",
                "body.bytes": "\(bytes)", "body.seconds": "\(seconds)",
                "latency.seconds": "\(estimate.latency ?? -1)", "throughput": "\(estimate.throughput ?? -1)",
                "feed.latency.seconds": "\(ofFeed.latency ?? -1)", "feed.throughput": "\(ofFeed.throughput ?? -1)",
            ])
    }
}

/// Seconds on a clock that only moves forward (not the wall clock).
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
