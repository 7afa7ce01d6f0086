import Foundation
import Locking
import Logging

/// Asks origins for the sizes their feeds leave out (docs/DESIGN.md, "Real
/// sizes"), on a thread of its own: an episode whose enclosure gives no
/// length shows 0 bytes until something asks its origin, and `rsync`, a
/// file manager or `du` trust what `stat` says. Each check is one byte,
/// the first (`Episode.State.startSizeCheck`), in the order `SizeChecks`
/// gives; its head tells the length, which the index keeps, and the
/// kernel's copy of the size is dropped. Like the keeper's downloads, the
/// checks give way to readers: none is sent while a reader's fetch is on
/// its way, or for `quiet` seconds after.
final class Sizer: Sendable {
    // MARK: - Properties

    private let catalog: Catalog
    private let reader: EpisodeReader
    private let logger: Logger
    private let quiet: Double
    private let stopping = Locked(false)
    private let started = Locked(false)
    /// Set by `poke`: the catalogue changed since the last plan.
    private let changed = Locked(true)
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    /// Seconds a check may take before its slot goes to the next. A check
    /// frees it at its head or its end (`Fetch.sizeCheckStall` bounds a
    /// silent host); this is a backstop for an episode an open joined,
    /// which goes on fetching for its reader.
    static let patience = 45.0
    /// Seconds between plans while the catalogue keeps changing (a cold
    /// mount installs a thousand shows, one poke each).
    static let replanEvery = 1.0

    // MARK: - Init

    init(catalog: Catalog, reader: EpisodeReader, logger: Logger, quiet: Double) {
        self.catalog = catalog
        self.reader = reader
        self.logger = logger
        self.quiet = quiet
    }

    // MARK: - Methods

    func start() {
        guard !started.withLock({ let was = $0; $0 = true; return was }) else { return }
        BackgroundPriority.startThread(named: "podfs.sizes", stackSize: 1 << 20) { [self] in
            run()
            ended.signal()
        }
    }

    /// Plans again: shows were built, refreshed or added.
    func poke() {
        changed.withLock { $0 = true }
        wake.signal()
    }

    /// Stops the thread (checks on their way end with the client); waits
    /// for it. Once: later calls return at once.
    func stop() {
        let already = stopping.withLock { stopping in
            defer { stopping = true }
            return stopping
        }
        guard !already else { return }
        wake.signal()
        guard started.withLock({ $0 }) else { return }
        ended.wait()
    }

    // MARK: - Private methods

    private var isStopping: Bool { stopping.withLock { $0 } }

    private func run() {
        var checks = SizeChecks()
        var unsized: [String: (episode: Episode, show: String)] = [:]
        var sent: [String: (episode: Episode, show: String, at: Double)] = [:]
        var planned = -Double.infinity
        var told = (sized: 0, failed: 0)
        var restSaid: Set<String> = []
        while !isStopping {
            var now = monotonicSeconds()
            if changed.withLock({ $0 }), now - planned >= Self.replanEvery {
                changed.withLock { $0 = false }
                planned = now
                unsized = Self.unsizedEpisodes(catalog.shows)
                checks.replan(unsized.values.map(\.episode.candidate))
                logger.debug("planned size checks", metadata: ["episodes": "\(unsized.count)"])
            }
            for (key, check) in sent {
                let progress = reader.fillProgress(check.episode)
                guard !progress.fetching || now - check.at >= Self.patience else { continue }
                sent[key] = nil
                if progress.length != nil { told.sized += 1 } else { told.failed += 1 }
                let answer = Self.answer(progress)
                if let show = checks.ended(key, answer, now: now) {
                    // Once a show a mount: a dead host would say it hourly.
                    let first = restSaid.insert(show).inserted
                    logger.log(
                        level: first ? .notice : .debug,
                        "stopped asking a show's origin for the sizes its feed leaves out, for an hour: \(Self.why(answer)). Those episodes show 0 bytes until opened",
                        metadata: ["show": "\(check.show)", "url": .url(check.episode.url)])
                }
            }
            let busy = reader.foreground.isBusy(besides: nil, quiet: quiet)
            if !busy {
                now = monotonicSeconds()
                while let next = checks.next(now: now) {
                    guard let (episode, show) = unsized[next.key], reader.checkSize(episode) else {
                        // Sized meanwhile, opened, or of a host whose
                        // answer would be one variant's: nothing to ask.
                        checks.dropped(next.key)
                        continue
                    }
                    sent[next.key] = (episode, show, now)
                }
            }
            if sent.isEmpty, checks.isIdle(now: monotonicSeconds()) {
                if told.sized + told.failed > 0 {
                    logger.info(
                        "asked origins for the sizes their feeds leave out",
                        metadata: ["episodes.sized": "\(told.sized)", "episodes.failed": "\(told.failed)"])
                    told = (0, 0)
                }
                // Until the catalogue changes (planned at most once a
                // `replanEvery`), or a failed check's retry.
                let pending = changed.withLock { $0 }
                _ = wake.wait(timeout: .now() + (pending ? max(0.02, planned + Self.replanEvery - now) : 60))
            } else {
                // Checks on their way are looked at every 20 ms; while a
                // reader's fetch holds the rest back, four times a second.
                _ = wake.wait(timeout: .now() + (busy && sent.isEmpty ? 0.25 : 0.02))
            }
        }
    }

    /// How a check ended, from the episode's state once its fetch ended.
    private static func answer(_ progress: Episode.State.FillProgress) -> SizeChecks.Answer {
        guard progress.length != nil else { return progress.streamsWhole ? .unproven : .failed }
        // Told by a whole episode's response, cut short: a host that
        // ignores Range.
        return progress.ignoresRange ? .whole : .sized
    }

    private static func why(_ answer: SizeChecks.Answer) -> String {
        switch answer {
        case .whole: "its host answers with whole episodes (it ignores Range)"
        case .unproven: "its host sends no validator that proves a version, so no check tells a size"
        case .sized, .failed: "\(SizeChecks.failuresBeforeRest) checks in a row failed"
        }
    }

    /// The episodes whose size nobody has told, with their show's name: no
    /// length in the feed, none from the origin. Not a show's cover,
    /// transcripts or chapters (the keeper keeps the covers; players open
    /// the others with their episode).
    private static func unsizedEpisodes(_ shows: [Catalog.Show]) -> [String: (episode: Episode, show: String)] {
        var unsized: [String: (episode: Episode, show: String)] = [:]
        for show in shows {
            for episode in show.episodes where episode.feedLength == nil {
                let told = episode.state.ifMade { $0.length }.flatMap { $0 }
                if told == nil { unsized[episode.key] = (episode, show.name) }
            }
        }
        return unsized
    }
}

extension Episode {
    /// As `SizeChecks` orders it: by its show's feed and its time.
    fileprivate var candidate: SizeChecks.Candidate {
        SizeChecks.Candidate(key: key, show: folder.feedURL, date: modificationTime)
    }
}
