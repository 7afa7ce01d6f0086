import Foundation

/// Bounds the body bytes held in memory between the network thread and the
/// writers.
///
/// When the disk is slower than the network, the network thread waits in
/// `acquire` until writers have drained enough: memory stays flat however
/// large the episode (the daemon's RSS does not grow with the file).
final class ByteBudget: @unchecked Sendable {
    // MARK: - Properties

    private let limit: Int
    /// Guards `used`; waited on by `acquire`.
    private let condition = NSCondition()
    /// Bytes acquired and not yet released. Guarded by `condition`.
    private var used = 0

    // MARK: - Init

    init(limit: Int) {
        self.limit = limit
    }

    // MARK: - Methods

    /// Takes `count` bytes, waiting while that would pass the limit (a
    /// single chunk larger than the limit is let through when nothing else
    /// is held, so nothing waits forever).
    func acquire(_ count: Int) {
        condition.lock()
        while used > 0 && used + count > limit {
            condition.wait()
        }
        used += count
        condition.unlock()
    }

    /// Gives back bytes taken with `acquire`.
    func release(_ count: Int) {
        condition.lock()
        used -= count
        condition.broadcast()
        condition.unlock()
    }
}
