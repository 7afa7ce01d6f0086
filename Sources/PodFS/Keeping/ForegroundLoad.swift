import Locking

/// Readers' fetches on the network now, by episode (docs/DESIGN.md,
/// "Offline by policy"): the cache's own downloads run only while no
/// reader's fetch is on its way, besides those of the episode they fill
/// (a reader of that episode shares its bytes), and pause the moment one
/// starts. One attempt of a fetch is one `began` and one `ended`.
public final class ForegroundLoad: Sendable {
    // MARK: - Nested types

    private struct Load {
        var total = 0
        var byEpisode: [ObjectIdentifier: Int] = [:]
        /// When the last reader's fetch ended (monotonic seconds).
        var endedAt: Double = -.infinity
    }

    // MARK: - Properties

    private let load = Locked(Load())

    // MARK: - Methods

    func began(_ episode: Episode) {
        load.withLock { load in
            load.total += 1
            load.byEpisode[ObjectIdentifier(episode), default: 0] += 1
        }
    }

    func ended(_ episode: Episode) {
        load.withLock { load in
            load.total = max(0, load.total - 1)
            let id = ObjectIdentifier(episode)
            let left = (load.byEpisode[id] ?? 1) - 1
            load.byEpisode[id] = left > 0 ? left : nil
            load.endedAt = monotonicSeconds()
        }
    }

    /// Whether a reader's fetch of another episode than `besides` is on
    /// its way, or one ended less than `quiet` seconds ago (a player's
    /// next request often follows the last within moments).
    public func isBusy(besides episode: Episode?, quiet: Double) -> Bool {
        load.withLock { load in
            let own = episode.map { load.byEpisode[ObjectIdentifier($0)] ?? 0 } ?? 0
            return load.total - own > 0 || monotonicSeconds() - load.endedAt < quiet
        }
    }
}
