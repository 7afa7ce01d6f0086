import Foundation
import Locking
public import Logging
import ReadRules

/// Fetches ahead of a library scan (docs/DESIGN.md, "Who reads"): the mount
/// tells it every open and close of an episode file (with where the file
/// read, `ReadExtent`), `ScanPattern`
/// says when a folder is being scanned and which files come next, and its
/// threads fetch those files' heads and tails, several at once, so the scan
/// goes at the link's pace instead of a round trip per file.
///
/// A fetch ahead opens the episode as the keeper does
/// (`EpisodeReader.openForKeeping`: the same probe, validation and variant
/// rules), fills the head and the tail the scan reads
/// (`EpisodeReader.fillNext(within:)`) and closes it. Its fetches are the
/// cache's own (`Fetch.forKeeper`): they are ordinary fetches that the
/// scanner's reads join when it opens the file, committed as any other's.
public final class ScanAhead: Sendable {
    // MARK: - Nested types

    private struct Job {
        var episode: Episode
        var head: Int64
        var tail: Int64
    }

    private struct Queue {
        var jobs: [Job] = []
        /// Keys queued or being fetched ahead.
        var busy: Set<String> = []
        var threads = 0
        var stopping = false
    }

    // MARK: - Properties

    private let catalog: Catalog
    private let reader: EpisodeReader
    private let logger: Logger
    private let pattern: Locked<ScanPattern>
    private let queue = Locked(Queue())
    private let work = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    /// Threads that fetch ahead, started as the first scan is seen: the
    /// files a scan reads next, fetched at once.
    private let workers: Int

    // MARK: - Init

    init(catalog: Catalog, reader: EpisodeReader, logger: Logger, tuning: ScanPattern.Tuning = .init()) {
        self.catalog = catalog
        self.reader = reader
        self.logger = logger
        self.pattern = Locked(ScanPattern(tuning: tuning))
        self.workers = tuning.depth
    }

    /// For a mount: the reader's and the catalogue's; a head is fetched
    /// ahead as far as the reader's reads reach.
    public convenience init(catalog: Catalog, reader: EpisodeReader, logger: Logger) {
        var tuning = ScanPattern.Tuning()
        tuning.reads = reader.tuning
        self.init(catalog: catalog, reader: reader, logger: logger, tuning: tuning)
    }

    // MARK: - Methods

    /// File `handle` of `episode` was opened.
    func opened(_ episode: Episode, handle: UInt64) {
        guard episode.isEpisode, let file = file(of: episode) else { return }
        let now = monotonicSeconds()
        enqueue(pattern.withLock { $0.opened(handle: handle, file: file, now: now) })
    }

    /// File `handle` was closed, having read `extent`. The debug log says
    /// what the pattern made of it, also when that is nothing: the line
    /// comes after any fetch ahead it started was queued (and logged).
    func released(handle: UInt64, extent: ReadExtent) {
        let now = monotonicSeconds()
        let ahead = pattern.withLock { pattern in
            pattern.forgetEnded(now: now)
            return pattern.released(handle: handle, extent: extent, now: now)
        }
        enqueue(ahead)
        logger.debug("scan-ahead noted a closed file", metadata: ["files.ahead": "\(ahead.count)"])
    }

    /// Stops fetching ahead: queued files are dropped, files being fetched
    /// are closed where they are; waits for the threads.
    public func stop() {
        let threads = queue.withLock { queue in
            queue.stopping = true
            queue.jobs = []
            defer { queue.threads = 0 }
            return queue.threads
        }
        for _ in 0..<threads { work.signal() }
        for _ in 0..<threads { ended.wait() }
    }

    // MARK: - Private methods

    /// Where `episode` is among its folder's episodes, in listing order.
    private func file(of episode: Episode) -> ScanPattern.File? {
        guard case .show(let show) = catalog.node(episode.parent),
            let position = show.episodes.firstIndex(where: { $0 === episode })
        else { return nil }
        return ScanPattern.File(folder: show.inode, position: position, count: show.episodes.count)
    }

    private func enqueue(_ prefetches: [ScanPattern.Prefetch]) {
        guard !prefetches.isEmpty else { return }
        var jobs: [Job] = []
        for prefetch in prefetches {
            guard case .show(let show) = catalog.node(prefetch.folder), show.episodes.indices.contains(prefetch.position)
            else { continue }
            jobs.append(Job(episode: show.episodes[prefetch.position], head: prefetch.head, tail: prefetch.tail))
        }
        let (added, start) = queue.withLock { queue -> (Int, Int) in
            guard !queue.stopping else { return (0, 0) }
            let fresh = jobs.filter { !queue.busy.contains($0.episode.key) }
            queue.jobs += fresh
            queue.busy.formUnion(fresh.map(\.episode.key))
            // Files the scan has passed while the threads were busy are
            // not what it reads next: only the newest `workers` wait.
            while queue.jobs.count > workers { queue.busy.remove(queue.jobs.removeFirst().episode.key) }
            let start = min(workers - queue.threads, fresh.count)
            queue.threads += max(0, start)
            return (fresh.count, max(0, start))
        }
        guard added > 0 else { return }
        logger.debug("a folder is being scanned: fetching the next files' heads and tails", metadata: ["files": "\(added)"])
        for _ in 0..<start { startThread() }
        for _ in 0..<added { work.signal() }
    }

    private func startThread() {
        let thread = Thread { [self] in
            // SIGINT, SIGTERM and SIGHUP are the FUSE loop's to take.
            FeedRound.blockTerminationSignals()
            while true {
                work.wait()
                let next = queue.withLock { queue -> Job?? in
                    if queue.stopping { return .none }
                    return queue.jobs.isEmpty ? .some(nil) : .some(queue.jobs.removeFirst())
                }
                guard let job = next else { break }
                guard let job else { continue }
                fetchAhead(job)
                _ = queue.withLock { $0.busy.remove(job.episode.key) }
            }
            ended.signal()
        }
        thread.name = "podfs.scan-ahead"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Brings `job`'s head and tail to the cache, unless they are here or
    /// its host stitches per request (its one stream from byte 0 is its
    /// variant: a head and a tail of its own would stream the whole file).
    private func fetchAhead(_ job: Job) {
        let episode = job.episode
        let progress = reader.fillProgress(episode)
        if progress.streamsWhole || (progress.present == 0 && reader.showStitches(episode)) { return }
        if let length = progress.length, holds(episode, ranges(of: job, length: length)) { return }
        guard let handle = reader.openForKeeping(episode, timeout: 30) else {
            logger.debug("fetching ahead of a scan: the open failed", metadata: ["episode.key": "\(episode.key)"])
            return
        }
        defer { reader.closeForKeeping(episode, handle: handle, fills: []) }
        // An open of an episode with nothing cached is answered before its
        // probe's head: the fills go out once that told the length. The
        // file is held open until they end (a fetch no open file reads
        // stops, `stopUnreadStreams`).
        var sent: [UInt64]?
        let began = monotonicSeconds()
        while !isStopping {
            if let sent {
                // Its own fills: another reader's stream, or the keeper's,
                // may go on for long.
                if !reader.onTheirWay(episode, sent) { return }
            } else if let length = reader.fillProgress(episode).length,
                reader.readsCurrentVersion(episode, handle: handle)
            {
                sent = reader.fillNext(episode, handle: handle, within: ranges(of: job, length: length))
                continue
            }
            // A probe that never answered, or a version replaced meanwhile.
            if monotonicSeconds() - began > (sent == nil ? 10 : 60) { return }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    private var isStopping: Bool { queue.withLock(\.stopping) }

    /// The head, and the tail from the start of the page it begins in
    /// (where the kernel's read of it starts).
    private func ranges(of job: Job, length: Int64) -> [Range<Int64>] {
        let tailStart = max(0, length - job.tail) / 4096 * 4096
        return [0..<min(length, job.head), min(length, tailStart)..<length].filter { !$0.isEmpty }
    }

    private func holds(_ episode: Episode, _ ranges: [Range<Int64>]) -> Bool {
        episode.state.ifMade { state in ranges.allSatisfy { state.present.contains($0) } } ?? false
    }
}
