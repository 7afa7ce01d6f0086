import Foundation
import RangeCache

/// The first open of a cached episode in a mount waits for the origin to
/// confirm the cached bytes are still its bytes (a request with
/// `If-Range`): one round trip, more if the URL redirects, before a byte
/// is served. The episodes a listener is most likely to reopen after a
/// remount or a reboot are the ones read last; they are checked as the
/// mount starts, so their first open is answered at once. The driver's
/// wiring of the mount's start: no state of its own (which episodes were
/// read last is the index's, `Eviction.usage`; the check is the state's
/// event, `startMountCheck`, sent as `Effect.check`).
extension EpisodeReader {
    /// Sends the first open's check (one byte, `If-Range`) for up to
    /// `limit` episodes with cached bytes, most recently read first, read
    /// within the last `window` seconds. An open that comes while a check
    /// is on its way waits for that one; a failed check leaves the episode
    /// as it was (its first open asks again, or serves the cache offline).
    /// Returns how many were sent.
    @discardableResult
    public func revalidateRecentlyRead(limit: Int = 4, within window: Double = 30 * 86_400) -> Int {
        guard let usage = eviction.usage() else { return 0 }
        let since = Int64(Date().timeIntervalSince1970 - window)
        let recent = usage.filter { $0.bytes > 0 && ($0.lastRead ?? 0) >= since }
            .sorted { ($0.lastRead ?? 0) > ($1.lastRead ?? 0) }
        let known = known.episodes(recent.map(\.key))
        var sent = 0
        for episode in known where sent < limit {
            guard let probe = episode.state.withLock({ $0.startMountCheck() }) else { continue }
            carryOut([.check(probe)], of: episode)
            sent += 1
        }
        if sent > 0 { logger.debug("checking recently read episodes with their origin", metadata: ["episodes": "\(sent)"]) }
        return sent
    }
}
