import Dispatch
public import FUSEBridge
import Foundation
public import Logging
public import RangeCache
import Locking
import Synchronization

/// Serves reads of episodes from the scratch files and fetches what is
/// missing, one fetch per byte however many readers ask.
///
/// Guarantees (DESIGN.md): a reader is answered as soon as its bytes are on
/// disk (a reader whose short fetch is arriving, or whose bytes sit in the
/// chunk being written, is answered from memory, with the same bytes); a
/// read never waits on another episode's network; the index never
/// lists a byte that is not durably on disk (see `EpisodeReader+Durability`);
/// bytes of two versions never mix (a changed origin bumps the episode's
/// generation and older handles get EIO).
public final class EpisodeReader: Sendable {
    // MARK: - Nested types

    /// Tuning of fetch sizes.
    public struct Tuning: Sendable {
        /// The smallest fetch for a gap of a read that continues a stream
        /// (its first step), and the open's probe.
        public var minimumFetch: Int64 = 256 * 1024
        /// The smallest fetch for a read that jumped (a scrub, a random
        /// read) from a near origin (`LinkEstimate.isNear`): the kernel's
        /// request, at least this. The reader waits for what it asked for,
        /// not for 256 KiB it may never read; on loopback a 4 KiB random
        /// read took 0.37-0.58 ms at 256 KiB and 0.23-0.28 ms at 16 KiB. A
        /// reader that reads on grows its window from the next read, as
        /// before. From a far origin a jump fetches `minimumFetch`: the
        /// next read would otherwise wait a round trip more.
        public var jumpFetch: Int64 = 16 * 1024
        /// The largest read-ahead window a sequential reader's streak grows
        /// to (1, 4, 16 MiB).
        public var maximumWindow: Int64 = 16 * 1024 * 1024
        /// The largest window sized by the link instead (twice the bytes it
        /// holds in flight at its shortest round trip,
        /// `LinkEstimate.readAheadAtShortestLatency`): only a far and fast
        /// origin needs more than `maximumWindow` (20 ms at 1.3 GB/s holds
        /// 26 MB), and there windows capped at 16 MiB each went out on a
        /// connection of their own, every new one a round trip more. At +20
        /// ms on loopback a 64 MiB cold read took 546-604 MB/s with the cap
        /// at 16 MiB and 612-710 with it at 64 (curl 725-837; 5 rounds
        /// each, interleaved, twice). It is a window of time, not of bytes:
        /// a link slow enough to need less gets less, and a near origin
        /// keeps the ramp's 16 MiB.
        public var maximumLinkWindow: Int64 = 64 * 1024 * 1024
        /// Attempts per fetch before readers get EIO.
        public var attempts: Int = 4
        /// The longest `Retry-After` a retry waits for; an origin asking
        /// for more gets no retry (the read fails at once with EIO).
        public var longestRetryAfter: Double = 5
        /// Seconds after which an open asks the origin again whether the
        /// episode changed (the first open in a mount always asks).
        public var revalidateAfter: Double = 3600
        /// The most bytes the cache may hold; `nil`: no cap.
        public var cacheLimit: Int64?
        /// Commit after every chunk written instead of on the flush
        /// thread's interval (slow; for measuring what batching saves).
        public var commitEveryChunk = false
        /// The most bytes per episode kept in memory when they cannot be
        /// written to the cache (a full disk).
        public var spillLimit = 64 * 1024 * 1024

        public init() {}
    }

    // MARK: - Properties

    let index: CacheIndex
    let source: any RangeSource
    let logger: Logger
    let tuning: Tuning
    /// Told when an episode's size or bytes changed under the kernel's caches.
    let invalidator: Locked<(any KernelCacheInvalidator)?> = Locked(nil)
    /// Serialises index commits with version drops (lock order: this, then
    /// an episode's state). Holds the number of commits made (debug log);
    /// a zero-size value would also trip TSan's exclusivity checks.
    let indexLock = Locked<Int>(0)
    /// Episodes whose `present` changed since the last commit.
    let dirtyEpisodes = Locked<[ObjectIdentifier: Episode]>([:])
    private let nextID = Atomic<UInt64>(1)
    let flusher = Locked<FlushThreadState>(.idle)
    /// The mount's episodes by key, for eviction (episodes of feeds not
    /// mounted are evicted in the index and on disk only).
    let episodesByKey = Locked<[String: Episode]>([:])
    /// Retries waiting for their delay to pass (see `drainWriters`).
    let pendingRetries = Locked(0)
    /// Fetch completions queued for the writers and not yet run: one may
    /// make reads again that start (and, after shutdown, fail) new fetches,
    /// whose completions queue behind the writers' `sync` (`drainWriters`).
    let pendingCompletions = Locked(0)
    /// Body bytes queued for the writers, at most 4 MiB.
    let writeBudget = ByteBudget(limit: 4 * 1024 * 1024)
    /// Memory for body chunks: 512 KiB each, big enough that a `pwrite` and
    /// the bookkeeping around it are rare, small enough to keep memory flat
    /// (the budget above holds at most 8 of them, plus one gathering per
    /// transfer; 8 spare ones are kept).
    let chunkPool = BufferPool(capacity: 512 * 1024, limit: 8)
    /// Memory for answering reads from the disk: the kernel asks for at most
    /// 1 MiB at a time.
    let readBuffers = BufferPool(capacity: 1024 * 1024, limit: 8)
    /// Serial queues that write fetched bytes to scratch files; an episode
    /// always uses the same one, so its writes keep their order. Writing
    /// off the network thread lets one core receive while another writes.
    private let writers: [DispatchQueue] = (0..<4).map { DispatchQueue(label: "podfs.writer.\($0)") }
    /// Whether the cache's disk is full, and its reserve file.
    let disk: DiskSpace
    /// Round trip and rate seen on the way to the origin (sizes read-ahead).
    let link = Locked(LinkEstimate())

    // MARK: - Init

    public init(index: CacheIndex, source: any RangeSource, logger: Logger, tuning: Tuning = Tuning()) {
        self.index = index
        self.source = source
        self.logger = logger
        self.tuning = tuning
        self.disk = DiskSpace(directory: index.directory)
    }

    // MARK: - Public methods

    /// Tells the reader which episodes the mount shows.
    public func adopt(_ episodes: [Episode]) {
        episodesByKey.withLock { known in
            for episode in episodes { known[episode.key] = episode }
        }
    }

    /// Lets the reader drop the kernel's cached size and pages of an episode.
    public func attach(invalidator: any KernelCacheInvalidator) {
        self.invalidator.withLock { $0 = invalidator }
    }

    /// Forgets the session (after it closed): nothing is left to tell, and
    /// the session refers back to the reader through the file system.
    public func detachInvalidator() {
        invalidator.withLock { $0 = nil }
    }

    /// Opens an episode. The first open in a mount, and the first after
    /// `revalidateAfter`, asks the origin (with `If-Range`) so the size is
    /// real and a changed episode is noticed; the
    /// answer comes when the response head arrives, or at once when already
    /// validated. Offline, a cached episode opens from the cache.
    ///
    /// An episode with nothing cached opens at once, while its probe is on
    /// its way: no byte could be served stale, so its reads (and `stat`s)
    /// just wait for the response, and the first byte comes one round trip
    /// sooner.
    public func open(_ episode: Episode, reply: OpenReply) {
        let handle = makeID()
        enum Next {
            case answer(OpenOptions), wait
            /// Send the probe, then answer the open if `answer` is set (else
            /// the probe's head answers it).
            case probe(Probe, answer: OpenOptions?)
        }
        let next: Next = episode.state.withLock { state in
            let dropAttributes = Episode.markOpened(&state)
            if state.validated, let at = state.validatedAt, monotonicSeconds() - at < tuning.revalidateAfter {
                state.handles[handle] = Episode.HandleState(generation: state.generation)
                defer { state.kernelPagesStale = false }
                return .answer(
                    OpenOptions(handle: handle, keepCache: !state.kernelPagesStale, dropAttributes: dropAttributes))
            }
            // Confirmed before in this mount, but longer ago than the TTL: ask
            // again with a probe of its own (a fetch already streaming has
            // had its head and would not answer this open).
            let revalidating = state.validatedAt != nil
            if !revalidating, state.present.isEmpty, state.spill.isEmpty, state.openWaiters.isEmpty,
                state.fetches.isEmpty || state.probeID != nil, (episode.feedLength ?? 0) > 0
            {
                // Nothing cached: open now. The kernel has no pages of this
                // episode that could be kept (keep_cache off all the same).
                // Only with a size from the feed: a file the kernel thinks
                // empty would read as empty, not fail, if the probe failed.
                state.handles[handle] = Episode.HandleState(generation: state.generation, provisional: true)
                let options = OpenOptions(handle: handle, keepCache: false, dropAttributes: dropAttributes)
                if state.probeID != nil { return .answer(options) }
                return .probe(startProbe(&state, episode: episode), answer: options)
            }
            state.openWaiters.append(Episode.OpenWaiter(reply: reply, handle: handle, dropAttributes: dropAttributes))
            if state.openWaiters.count > 1 || (!revalidating && !state.fetches.isEmpty) {
                // A probe is already on its way; its head answers this open.
                state.validated = false
                return .wait
            }
            return .probe(startProbe(&state, episode: episode), answer: nil)
        }
        switch next {
        case .answer(let options):
            reply.opened(options)
        case .probe(let probe, let options):
            // The open's answer first: waking the network thread for the
            // request can preempt this thread on a busy machine, and the
            // open then waits for the whole request to go out (p50 0.48 ms
            // request-first, 0.29 ms answer-first on loopback, 20 fresh
            // mounts each; the first byte comes no later: the read waits
            // for the response either way).
            if let options { reply.opened(options) }
            send(probe)
        case .wait:
            break
        }
    }

    /// The request that validates an episode at its first open in a mount.
    struct Probe {
        let fetch: Fetch
        let range: Range<Int64>
        let validator: String?
        let url: String
    }

    /// Registers the open's probe: the first missing bytes (or one byte),
    /// whose head confirms the size and version and whose body answers
    /// readers as it arrives. A background probe (see
    /// `revalidateRecentlyRead`) asks for `range` and fails quietly.
    func startProbe(
        _ state: inout Episode.State, episode: Episode, range: Range<Int64>? = nil, background: Bool = false
    ) -> Probe {
        state.validated = false
        let range = range ?? probeRange(state)
        let fetch = Fetch(id: makeID(), episode: episode, reader: self, isBackground: background)
        state.fetches[fetch.id] = Episode.FetchProgress(
            cursor: range.lowerBound, upper: range.upperBound, generation: state.generation,
            answersOnArrival: true)
        state.probeID = fetch.id
        return Probe(fetch: fetch, range: range, validator: validator(state), url: state.effectiveURL ?? episode.url)
    }

    /// Sends a probe's first attempt (outside the episode's lock).
    func send(_ probe: Probe) {
        _ = probe.fetch.nextAttempt()
        launch(probe.fetch, url: probe.url, range: probe.range, validator: probe.validator)
    }

    /// Runs `answer` once the episode's size is the origin's, if an open
    /// file waits for that (see `open`), else at once.
    public func whenSized(_ episode: Episode, answer: @escaping @Sendable () -> Void) {
        let waits = episode.state.withLock { state -> Bool in
            guard state.handles.values.contains(where: \.provisional) else { return false }
            state.sizeWaiters.append(answer)
            return true
        }
        if !waits { answer() }
    }

    /// Reads `size` bytes at `offset`; answers with fewer only at the end.
    public func read(_ episode: Episode, handle: UInt64, offset: Int64, size: Int, reply: DataReply) {
        var starts: [(Fetch, Range<Int64>)] = []
        let outcome: ReadOutcome = episode.state.withLock { state in
            guard var handleState = state.handles[handle] else { return .fail }
            if handleState.provisional {
                // Opened before the first response: wait for it.
                state.earlyReads.append(Episode.EarlyRead(handle: handle, offset: offset, size: size, reply: reply))
                return .wait
            }
            guard handleState.generation == state.generation else {
                // The origin changed since this file was opened: serving the
                // rest from the new version would mix two versions.
                return .fail
            }
            guard let length = state.length else { return .fail }
            let end = ReadPlan.end(offset: offset, size: size, length: length)
            state.lastRead = Int64(Date().timeIntervalSince1970)
            // Sequential streak: the window grows while reads follow on. The
            // kernel's read-ahead sends several reads at once and they may
            // arrive out of order, so "follows on" means "lands near where
            // the last one ended"; a jump further than that (a listener
            // scrubbing) starts over.
            if handleState.streak == 0, handleState.nextOffset == 0, let last = state.lastStream,
                monotonicSeconds() - last.closedAt < Self.reopenGrace, abs(offset - last.end) <= Self.nearby
            {
                // A reopen that reads on where the last reader stopped.
                handleState.streak = last.streak
                handleState.nextOffset = last.end
                state.lastStream = nil
            }
            if handleState.streak == 0, handleState.nextOffset == 0, offset == 0 {
                // A fresh file read from its start is almost always a player
                // starting an episode: begin the streak one step ahead.
                handleState.streak = 1
            }
            let distance = abs(offset - handleState.nextOffset)
            if distance <= max(Self.nearby, windowSize(streak: handleState.streak)) {
                handleState.streak += 1
                handleState.nextOffset = max(handleState.nextOffset, end)
            } else {
                handleState.streak = 0
                handleState.nextOffset = end
            }
            state.handles[handle] = handleState
            if offset >= end { return .empty }
            let wanted = offset..<end
            let window = windowSize(streak: handleState.streak)
            if !state.available.contains(wanted) {
                for gap in uncoveredGaps(state, in: wanted) {
                    starts.append(planFetch(&state, episode: episode, from: gap, window: window, length: length))
                }
                state.waiters.append(Episode.Waiter(range: wanted, reply: reply, generation: state.generation))
            }
            if handleState.streak >= 2 {
                readAhead(&state, episode: episode, after: end, window: window, length: length, into: &starts)
            }
            guard state.available.contains(wanted) else { return .wait }
            return .serve(
                wanted, try? ensureScratch(&state, episode: episode, length: length), state.spill.pieces(overlapping: wanted))
        }
        let url = episode.state.withLock { $0.effectiveURL } ?? episode.url
        let validator = episode.state.withLock { self.validator($0) }
        for (fetch, range) in starts {
            logger.debug(
                "fetching",
                metadata: [
                    "episode.key": "\(episode.key)", "range.lower": "\(range.lowerBound)",
                    "range.upper": "\(range.upperBound)", "read.offset": "\(offset)", "read.size": "\(size)",
                ])
            _ = fetch.nextAttempt()
            launch(fetch, url: url, range: range, validator: validator)
        }
        switch outcome {
        case .fail: reply.fail(.ioError)
        case .empty: reply.data(UnsafeRawBufferPointer(start: nil, count: 0))
        case .serve(let range, let scratch, let spilled):
            serve(range, from: scratch, spilled: spilled, episode: episode, reply: reply)
        case .wait: break
        }
    }

    /// Forgets an open file.
    public func release(_ episode: Episode, handle: UInt64) {
        episode.state.withLock { state in
            if let closing = state.handles.removeValue(forKey: handle), closing.streak >= 2 {
                state.lastStream = (closing.nextOffset, closing.streak, monotonicSeconds())
            }
            // Bytes kept in memory were for open files only.
            if state.handles.isEmpty { state.spill.removeAll() }
        }
    }

    // MARK: - Internal methods

    /// Starts the writers' threads now and maps the first body chunks, so
    /// the first download of a mount waits for neither (a fresh 512 KiB
    /// mapping costs 128 page faults where its bytes arrive).
    public func warmUp() {
        for writer in writers { writer.async {} }
        chunkPool.prefill(2)
    }

    /// Waits until every queued write and completion has run, and every
    /// retry that was waiting has started (and, once the HTTP client is
    /// shut down, failed): after this, nothing answers a kernel request
    /// unless a new one arrives.
    func drainWriters() {
        repeat {
            while pendingRetries.withLock({ $0 }) > 0 { Thread.sleep(forTimeInterval: 0.01) }
            for writer in writers { writer.sync {} }
        } while pendingRetries.withLock({ $0 }) > 0 || pendingCompletions.withLock({ $0 }) > 0
    }

    /// The serial queue that writes `episode`'s bytes and ends its fetches.
    func writer(for episode: Episode) -> DispatchQueue {
        writers[Int(episode.inode % UInt64(writers.count))]
    }

    func makeID() -> UInt64 {
        nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// The validator for `If-Range`: a strong ETag, else Last-Modified.
    func validator(_ state: Episode.State) -> String? {
        OriginVersion(length: state.length, etag: state.etag, lastModified: state.lastModified).ifRange
    }

    /// Reads `range` from the scratch file, and the parts of it that are
    /// only in memory from `spilled`, and answers.
    func serve(
        _ range: Range<Int64>, from scratch: ScratchFile?, spilled: [SpillBuffer.Piece] = [], episode: Episode,
        reply: DataReply
    ) {
        guard scratch != nil || SpillBuffer.covers(spilled, range) else {
            reply.fail(.ioError)
            return
        }
        let count = Int(range.count)
        if spilled.isEmpty, let scratch {
            // Straight from the file's page cache into the kernel's reply.
            if !reply.file(descriptor: scratch.fileDescriptor, offset: range.lowerBound, count: count) {
                logger.error(
                    "could not read the cache file; the read failed with EIO",
                    metadata: ["episode.key": "\(episode.key)", "path": "\(scratch.path)"])
            }
            return
        }
        let whole = readBuffers.take(atLeast: count)
        defer { readBuffers.give(whole) }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[0..<count])
        do {
            var got = try scratch?.read(into: buffer, at: range.lowerBound) ?? 0
            if !spilled.isEmpty {
                // The caller saw `range` covered by disk and memory together.
                SpillBuffer.copy(spilled, of: range, into: buffer)
                got = count
            }
            reply.data(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
        } catch {
            logger.error("could not read the cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            reply.fail(.ioError)
        }
    }

    /// Opens (creating, sparse, at full length) the episode's scratch file.
    func ensureScratch(_ state: inout Episode.State, episode: Episode, length: Int64) throws(FileError) -> ScratchFile {
        if let scratch = state.scratch {
            return scratch
        }
        let path = index.dataPath(forKey: episode.key)
        if !state.present.isEmpty, access(path, F_OK) != 0 {
            // The file is gone (deleted by hand?): what the index said is not
            // on disk, so forget it rather than serve zeros.
            logger.warning(
                "an episode's cache file is missing; its cached ranges are forgotten",
                metadata: ["episode.key": "\(episode.key)"])
            state.present = RangeSet()
            state.dirty = true
            markDirty(episode)
        }
        do {
            let scratch = try ScratchFile(path: path, length: length)
            state.scratch = scratch
            return scratch
        } catch {
            // Reads then come from memory (see EpisodeReader+DiskFull).
            cacheWriteFailed(error, episode: episode, state: &state)
            throw error
        }
    }

    /// The first response arrived (or the probe ended without one):
    /// provisional handles read the current version from now on. Returns
    /// the reads and `stat`s that waited for it, to be made again and
    /// answered outside the lock.
    func settleProvisionalHandles(
        _ state: inout Episode.State
    ) -> (reads: [Episode.EarlyRead], sized: [@Sendable () -> Void]) {
        for (handle, handleState) in state.handles where handleState.provisional {
            state.handles[handle] = Episode.HandleState(generation: state.generation)
        }
        defer {
            state.earlyReads.removeAll()
            state.sizeWaiters.removeAll()
        }
        return (state.earlyReads, state.sizeWaiters)
    }

    /// Answers what waited for the first response (see
    /// `settleProvisionalHandles`).
    func resume(_ waiting: (reads: [Episode.EarlyRead], sized: [@Sendable () -> Void]), of episode: Episode) {
        for answer in waiting.sized { answer() }
        for early in waiting.reads {
            read(episode, handle: early.handle, offset: early.offset, size: early.size, reply: early.reply)
        }
    }

    // MARK: - Private methods

    /// How far from the end of the last read the next one may land and
    /// still count as sequential.
    private static let nearby: Int64 = 2 * 1024 * 1024

    /// How long after a close a reopen still continues its stream.
    private static let reopenGrace: Double = 30

    private enum ReadOutcome {
        case fail, empty, wait
        case serve(Range<Int64>, ScratchFile?, [SpillBuffer.Piece])
    }

    /// The read-ahead window after `streak` sequential reads: it grows
    /// fourfold per read (1, 4, 16 MiB with the defaults), so a player
    /// that reads on costs a handful of requests, each round trip hidden
    /// behind the bytes still to arrive, even from a far origin. Where the
    /// link holds more than that in flight (a far, fast origin: 20 ms at
    /// 1 GB/s is 20 MB), a sequential reader starts with what it holds
    /// instead of paying a round trip per step: up to `maximumWindow` by
    /// the smoothed round trip, up to `maximumLinkWindow` by the shortest
    /// (which is no longer, so it only matters past `maximumWindow`). A
    /// read that jumped (streak 0) from a near origin fetches `jumpFetch`,
    /// the next one `minimumFetch`.
    private func windowSize(streak: Int) -> Int64 {
        let link = link.withLock { $0 }
        return ReadPlan.window(streak: streak, link: link, tuning: tuning)
    }

    /// Sends an attempt of `fetch`, noting when (see `LinkEstimate`).
    func launch(_ fetch: Fetch, url: String, range: Range<Int64>, validator: String?) {
        fetch.markSent()
        source.fetch(url: url, range: range, validator: validator, sink: fetch)
    }

    /// A response head arrived `seconds` after its request.
    func observe(latency seconds: Double) {
        link.withLock { $0.observe(latency: seconds) }
    }

    /// A response body of `bytes` took `seconds` after its head.
    func observe(bytes: Int64, in seconds: Double) {
        let estimate = link.withLock { link in
            link.observe(bytes: bytes, in: seconds)
            return link
        }
        logger.trace(
            "link estimate",
            metadata: [
                "body.bytes": "\(bytes)", "body.seconds": "\(seconds)",
                "latency.seconds": "\(estimate.latency ?? -1)", "throughput": "\(estimate.throughput ?? -1)",
            ])
    }

    /// What the first response of a mount should fetch: the first missing
    /// bytes (useful anyway), or one byte when all is cached.
    private func probeRange(_ state: Episode.State) -> Range<Int64> {
        guard let length = state.length else { return 0..<tuning.minimumFetch }
        guard length > 0 else { return 0..<1 }
        if let gap = state.present.gaps(in: 0..<length).first {
            return gap.lowerBound..<min(gap.upperBound, gap.lowerBound + tuning.minimumFetch)
        }
        return 0..<1
    }

    /// Gaps of `wanted` that are neither on disk nor on their way.
    private func uncoveredGaps(_ state: Episode.State, in wanted: Range<Int64>) -> [Range<Int64>] {
        var pending = RangeSet()
        for progress in state.fetches.values where progress.generation == state.generation && progress.cursor < progress.upper {
            pending.insert(progress.cursor..<progress.upper)
        }
        var result: [Range<Int64>] = []
        for gap in state.available.gaps(in: wanted) {
            result.append(contentsOf: pending.gaps(in: gap))
        }
        return result
    }

    /// Registers a fetch starting at `gap`'s start, widened to `window` but
    /// never over bytes already present or already on their way.
    private func planFetch(
        _ state: inout Episode.State, episode: Episode, from gap: Range<Int64>, window: Int64, length: Int64
    ) -> (Fetch, Range<Int64>) {
        var upper = ReadPlan.widenedEnd(of: gap, window: window, length: length)
        if let next = state.available.ranges.first(where: { $0.lowerBound > gap.lowerBound }) {
            upper = min(upper, next.lowerBound)
        }
        for progress in state.fetches.values where progress.generation == state.generation {
            if progress.cursor > gap.lowerBound { upper = min(upper, progress.cursor) }
        }
        upper = max(upper, gap.upperBound)
        let fetch = Fetch(id: makeID(), episode: episode, reader: self)
        state.fetches[fetch.id] = Episode.FetchProgress(
            cursor: gap.lowerBound, upper: upper, generation: state.generation,
            answersOnArrival: upper - gap.lowerBound <= tuning.minimumFetch)
        return (fetch, gap.lowerBound..<upper)
    }

    /// Keeps a sequential reader's next `window` bytes on their way.
    private func readAhead(
        _ state: inout Episode.State, episode: Episode, after end: Int64, window: Int64, length: Int64,
        into starts: inout [(Fetch, Range<Int64>)]
    ) {
        // The frontier: where bytes stop being present or on their way.
        var frontier = end
        var covered = state.available
        for progress in state.fetches.values where progress.generation == state.generation {
            covered.insert(progress.cursor..<max(progress.cursor, progress.upper))
        }
        frontier = covered.coveredPrefix(from: frontier)
        // The next window goes out as soon as less than a window is on its
        // way ahead of the reader, so a far origin's round trip is paid
        // while bytes still flow; a reader that has streamed long enough to
        // reach the largest window keeps two on their way. Where one window
        // is less than twice the bytes the link holds in flight (16 MiB is
        // 16 ms at 1 GB/s, under a 20 ms round trip), the next goes out
        // while one and a half are still ahead, not one.
        let (ahead, refill) = ReadPlan.readAheadTarget(
            window: window, maximumWindow: tuning.maximumWindow, outruns: link.withLock { $0.outruns(window: window) })
        guard frontier < length, frontier - end < refill else { return }
        while frontier < length, frontier - end < ahead {
            // Up to the next bytes already here or on their way: a window
            // never fetches again what is cached further on.
            let nextCovered = covered.ranges.first { $0.lowerBound > frontier }?.lowerBound ?? length
            let gapEnd = ReadPlan.readAheadEnd(from: frontier, window: window, length: length, nextCovered: nextCovered)
            let (fetch, range) = planFetch(&state, episode: episode, from: frontier..<gapEnd, window: window, length: length)
            starts.append((fetch, range))
            covered.insert(range)
            frontier = covered.coveredPrefix(from: range.upperBound)
        }
    }
}

/// Seconds on a clock that only moves forward (not the wall clock).
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
