import Foundation
import Locking

/// One download of the keeper (docs/DESIGN.md, "Offline by policy"): an
/// episode completed by fills, giving way to readers.
extension Keeper {
    /// Completes `episode`: fills its gaps one fetch at a time until every
    /// byte is on disk, the mount stops, it is no longer kept, or its fills
    /// stop bringing bytes (tried again in a minute).
    ///
    /// It gives way to readers: while a reader's fetch of another episode
    /// is on its way (or ended under `quiet` seconds ago), or a reader has
    /// another download's episode open, it closes its file and ends its
    /// fills where their bytes have come. An episode whose host stitches
    /// or proves nothing keeps its one stream (stopped, it would start again
    /// from byte 0 as another variant).
    func complete(_ episode: Episode, show: Catalog.Show) {
        var handle: UInt64?
        var fills = Set<UInt64>()
        func close() {
            guard let open = handle else { return }
            reader.closeForKeeping(episode, handle: open, fills: fills)
            (handle, fills) = (nil, [])
            _ = progress.withLock { $0.openByKeeper.removeValue(forKey: episode.key) }
        }
        defer { close() }
        let began = (time: monotonicSeconds(), bytes: reader.fillProgress(episode).present)
        var lastPresent: Int64 = -1
        var stalls = 0
        var noted = -Double.infinity
        var paused = false
        var waitsForRoom = false
        logger.debug("keeping an episode offline: downloading", metadata: ["episode.key": "\(episode.key)"])
        while !isStopping {
            guard reader.keptKeys.contains(episode.key) else {
                logger.debug("keeping an episode offline: no longer kept", metadata: ["episode.key": "\(episode.key)"])
                return
            }
            if reader.isMoving(episode) {
                // Its feed moved it to another file: the old one's fetch
                // stops, and once nothing holds the episode its bytes go
                // and this download asks the new link.
                close()
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            if mustGiveWay(episode) {
                if handle != nil {
                    close()
                    logger.debug("keeping an episode offline: paused for a reader", metadata: ["episode.key": "\(episode.key)"])
                }
                if !paused {
                    paused = true
                    note(episode, show: show, began: began, paused: true)
                }
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            paused = false
            if reader.disk.isFull {
                // The disk cannot take its bytes: it waits for the flush
                // thread to make room (evicting what is neither open nor
                // kept), rather than fetch bytes to throw away.
                reader.disk.wantRoom()
                if !waitsForRoom {
                    waitsForRoom = true
                    // Its bytes kept in memory meanwhile go with its file:
                    // fills reopened later fetch what the disk did not take.
                    close()
                    logger.info(
                        "keeping an episode offline: waiting for room on the cache's full disk",
                        metadata: ["episode": "\(episode.name)"])
                    note(episode, show: show, began: began, paused: true, waitsForRoom: true)
                }
                Thread.sleep(forTimeInterval: 0.25)
                continue
            }
            if waitsForRoom {
                // Fills that ended while the disk was full brought nothing
                // it could keep: no stall of the download.
                (waitsForRoom, stalls, lastPresent) = (false, 0, -1)
            }
            if let open = handle, !reader.readsCurrentVersion(episode, handle: open) {
                // A head replaced the version: its file reads the old one.
                close()
            }
            if handle == nil {
                // A cover's host that does not answer holds a download
                // thread for less.
                handle = reader.openForKeeping(episode, timeout: episode.isEpisode ? 60 : 15)
                guard handle != nil else {
                    fail(episode, why: "it could not be opened (the origin did not answer, or refused it)")
                    return
                }
                progress.withLock { $0.openByKeeper[episode.key] = episode }
            }
            let now = reader.fillProgress(episode)
            if now.holdsAll {
                // A cover of each show would be a thousand lines.
                logger.log(
                    level: episode.isEpisode ? .info : .debug, "kept an episode offline: complete",
                    metadata: ["episode": "\(episode.name)", "bytes": "\(now.length ?? now.present)"])
                return
            }
            // Its size, or the bytes of a stream that gives none.
            let size = now.length ?? now.present
            if !episode.isEpisode, size > KeepPlan.largestCover {
                // The plan leaves it out once its size is known; one that
                // streams without a length is not tried again this mount.
                logger.notice(
                    "a show's cover is larger than any artwork and is not kept offline; it is read when opened",
                    metadata: [
                        "episode": "\(episode.name)", "bytes": "\(size)", "largest.bytes": "\(KeepPlan.largestCover)",
                        "url": .url(episode.url),
                    ])
                progress.withLock { $0.failedUntil[episode.key] = .infinity }
                return
            }
            if !now.fetching {
                if now.present == lastPresent {
                    stalls += 1
                } else {
                    (stalls, lastPresent) = (0, now.present)
                }
                if stalls >= 3 {
                    fail(episode, why: "its fetches stopped bringing bytes")
                    return
                }
                if let handle { fills.formUnion(reader.fillNext(episode, handle: handle)) }
            }
            if monotonicSeconds() - noted >= 1 {
                noted = monotonicSeconds()
                note(episode, show: show, began: began, paused: false)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Whether the download of `episode` gives way now: a reader's fetch of
    /// another episode, or a reader with another download's episode open
    /// (it plays what that download brings). Not for an episode that
    /// streams whole.
    private func mustGiveWay(_ episode: Episode) -> Bool {
        if reader.foreground.isBusy(besides: episode, quiet: quiet) {
            return !reader.fillProgress(episode).streamsWhole
        }
        let others = progress.withLock { progress in progress.openByKeeper.filter { $0.key != episode.key }.values }
        // Files the kernel has open are a reader's (the keeper's own, and a
        // scan's fetch ahead, are not counted).
        guard others.contains(where: { reader.fillProgress($0).openFiles > 0 }) else { return false }
        return !reader.fillProgress(episode).streamsWhole
    }

    /// Says why `episode` could not be completed and when it is tried
    /// again: an episode in a minute; a cover (or a kept episode's
    /// transcript or chapters) in an hour, at notice level once a mount
    /// (debug after), as feeds often name art their host no longer has,
    /// and a thousand shows' would fill the log.
    func fail(_ episode: Episode, why: String) {
        // A fetch cut short by the unmount is no failure.
        guard !isStopping else { return }
        let retry = episode.isEpisode ? Self.episodeRetry : Self.extraRetry
        let firstTime = episode.isEpisode || progress.withLock { $0.failureSaid.insert(episode.key).inserted }
        logger.log(
            level: episode.isEpisode ? .warning : firstTime ? .notice : .debug,
            "could not keep \(episode.isEpisode ? "an episode" : "a show's file") offline; trying again in \(episode.isEpisode ? "a minute" : "an hour")",
            metadata: ["episode": "\(episode.name)", "reason": "\(why)", "url": .url(episode.url)])
        progress.withLock { $0.failedUntil[episode.key] = monotonicSeconds() + retry }
    }

    /// Seconds before a failed episode, or a failed cover, transcript or
    /// chapters file, is tried again.
    static let episodeRetry = 60.0
    static let extraRetry = 3600.0

    /// Records how a download goes and writes the report.
    func note(
        _ episode: Episode, show: Catalog.Show, began: (time: Double, bytes: Int64), paused: Bool,
        waitsForRoom: Bool = false
    ) {
        let now = reader.fillProgress(episode)
        let size = now.length ?? episode.size
        let elapsed = max(0.001, monotonicSeconds() - began.time)
        let rate = Int64(Double(max(0, now.present - began.bytes)) / elapsed)
        let download = Report.Download(
            show: show.name, episode: episode.name, bytes: now.present, size: size, rate: rate,
            secondsLeft: rate > 0 ? max(0, size - now.present) / rate : nil, paused: paused,
            waitsForRoom: waitsForRoom ? true : nil)
        progress.withLock { $0.downloads[episode.key] = .some(download) }
        guard let plan = progress.withLock({ $0.plan }) else { return }
        writeReport(plan: plan, shows: catalog.shows)
    }
}
