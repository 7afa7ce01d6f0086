import Dispatch
import FUSEBridge
import Locking

/// What the keeper (`Keeper`) asks of the reader: it opens an episode as a
/// reader would, fills its gaps one fetch at a time (`Episode.State.fill`)
/// and closes it; closing with `stop` ends its fills where their bytes
/// have come, unless a reader has the episode open.
extension EpisodeReader {
    // MARK: - Nested types

    /// An open's answer, waited for by the keeper's thread.
    private final class KeeperOpen: OpenReplying {
        let answered = DispatchSemaphore(value: 0)
        let result = Locked<Result<UInt64, FileSystemError>?>(nil)

        func opened(_ options: OpenOptions) {
            result.withLock { $0 = .success(options.handle) }
            answered.signal()
        }

        func fail(_ error: FileSystemError) {
            result.withLock { $0 = .failure(error) }
            answered.signal()
        }
    }

    // MARK: - Methods

    /// Opens `episode` for the keeper: its handle once the open is
    /// answered, `nil` when it failed or took longer than `timeout`
    /// seconds (an open answered later is closed at once).
    func openForKeeping(_ episode: Episode, timeout: Double) -> UInt64? {
        let reply = KeeperOpen()
        open(episode, reply: reply, forKeeper: true)
        if reply.answered.wait(timeout: .now() + timeout) == .timedOut {
            DispatchQueue.global().async { [self] in
                reply.answered.wait()
                if case .success(let handle) = reply.result.withLock({ $0 }) { release(episode, handle: handle) }
            }
            return nil
        }
        guard case .success(let handle) = reply.result.withLock({ $0 }) else { return nil }
        return handle
    }

    /// Starts the next fill of `episode` for the keeper's `handle`, if one
    /// is due (`Episode.State.fill`), or with `within`, the fills of those
    /// ranges for a scan's fetch ahead. Returns the fetches that went out.
    @discardableResult
    func fillNext(_ episode: Episode, handle: UInt64, within: [Range<Int64>]? = nil) -> [UInt64] {
        let (effects, target) = episode.state.withLock { state in
            let effects =
                within.map { state.fill(handle: handle, within: $0, tuning: tuning) }
                ?? state.fill(handle: handle, tuning: tuning)
            return (effects, self.target(state, of: episode))
        }
        carryOut(
            effects, of: episode,
            EffectContext(
                target: target, forKeeper: true,
                fetchLog: within == nil ? "keeping an episode: fetching" : "fetching ahead of a scan"))
        return effects.compactMap { if case .fetch(let id, _) = $0 { id } else { nil } }
    }

    /// Whether any of the fetches `ids` of `episode` is still on its way.
    func onTheirWay(_ episode: Episode, _ ids: [UInt64]) -> Bool {
        episode.state.withLock { state in
            ids.contains { id in state.fetches[id].map { $0.cursor < $0.upper } ?? false }
        }
    }

    /// Whether the keeper's `handle` reads `episode`'s current version.
    func readsCurrentVersion(_ episode: Episode, handle: UInt64) -> Bool {
        episode.state.withLock { $0.readsCurrentVersion(handle) }
    }

    /// How far `episode` is (`Episode.State.fillProgress`).
    func fillProgress(_ episode: Episode) -> Episode.State.FillProgress {
        episode.state.withLock(\.fillProgress)
    }

    /// Closes the keeper's file, and ends its fills `fills` where their
    /// bytes have come (`Episode.State.stopFills`).
    func closeForKeeping(_ episode: Episode, handle: UInt64, fills: Set<UInt64>) {
        release(episode, handle: handle)
        guard !fills.isEmpty else { return }
        let ids = episode.state.withLock { $0.stopFills(fills) }
        if !ids.isEmpty { stop(ids, of: episode) }
    }

    /// The episodes kept by policy now (`keep`).
    var keptKeys: Set<String> {
        eviction.kept.withLock { $0 }
    }

    /// Keeps `keys` from eviction (`KeepPlan.kept`).
    func keep(_ keys: Set<String>) {
        eviction.kept.withLock { $0 = keys }
    }

    /// Asks the origin for the size of `episode`, whose feed gives none
    /// (`Episode.State.startSizeCheck`): one byte, in the background, one
    /// of the cache's own fetches (a reader's do not wait for it). Its
    /// progress is `fillProgress`'s. Not of a show known to stitch: its
    /// episodes take that mark before their first byte (`inheritStitching`),
    /// and each variant has a size of its own. Returns whether a check went
    /// out.
    func checkSize(_ episode: Episode) -> Bool {
        guard !showStitches(episode) else { return false }
        known.meet(episode)
        guard let probe = episode.state.withLock({ $0.startSizeCheck() }) else { return false }
        startFetch(
            probe.id, range: probe.range, of: episode,
            to: RequestTarget(url: probe.url ?? episode.url, validator: probe.validator), background: true,
            forKeeper: true, sizeCheck: true)
        return true
    }
}
