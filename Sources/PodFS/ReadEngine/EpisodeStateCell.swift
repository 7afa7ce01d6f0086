import Locking
import RangeCache

extension Episode {
    /// One episode's read state behind its lock, and the lock of its
    /// transfers, made when an event first needs them. Most listed files
    /// are never opened, and the state is the largest part of a listed
    /// file's memory (about 400 bytes, and 80 more for the transfers' lock;
    /// measured with heaptrack), so a mount of many feeds holds them only
    /// for the files that were opened or have something cached. Until
    /// then, what `stat` told the kernel (`Episode.State.claimKeptUntil`)
    /// is all there is to keep. A struct around its lock, so a listed file
    /// pays for no object of its own beyond the lock.
    struct StateCell: Sendable {
        // MARK: - Nested types

        /// The state, once made. A class, so an unmade cell costs a word.
        private final class Box {
            var state: State
            /// `Episode.transfers`.
            let transfers = Locked<[UInt64: Fetch]>([:])

            init(_ state: sending State) {
                self.state = state
            }
        }

        private struct Slot {
            var made: Box?
            /// `State.claimKeptUntil` while the state is not made.
            var claimKeptUntil: Double = 0
        }

        // MARK: - Private properties

        private let slot: Locked<Slot>

        // MARK: - Init

        /// A cell holding `state` (restored from the index), or none yet.
        init(_ state: sending State?) {
            slot = Locked(Slot(made: state.map { Box($0) }))
        }

        // MARK: - Methods

        /// Runs `body` on the state, under the lock, making it first if it
        /// is not made yet.
        func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> sending Result
        ) throws(Failure) -> sending Result {
            try slot.withLock { (slot: inout sending Slot) throws(Failure) -> sending Result in
                try body(&Self.made(&slot).state)
            }
        }

        /// `Episode.transfers`: taken after this cell's lock is released.
        var transfers: Locked<[UInt64: Fetch]> {
            slot.withLock { Self.made(&$0).transfers }
        }

        /// Runs `body` on the state under the lock if it is made; `nil`
        /// (and nothing made) if it is not: an unmade state holds nothing
        /// (no length, no byte, no mark, no open file).
        func ifMade<Result: Sendable>(_ body: (inout State) -> Result) -> Result? {
            slot.withLock { (slot: inout sending Slot) -> Result? in
                guard let box = slot.made else { return nil }
                return body(&box.state)
            }
        }

        /// Runs `steps` under the lock if the episode is idle (no open
        /// file, no open waiting, no fetch: `State.mayEvict`), then, if
        /// they succeeded, starts the state afresh, knowing nothing but
        /// that its enclosure is now `url` (an enclosure that moved to
        /// another file, `EpisodeReader.follow`): whoever holds an
        /// `Episode` from before the move asks the new link. Returns
        /// whether it did.
        func forgetIfIdle(movingTo url: String, _ steps: () -> Bool) -> Bool {
            slot.withLock { (slot: inout sending Slot) -> Bool in
                if let box = slot.made {
                    guard box.state.mayEvict else { return false }
                    slot.claimKeptUntil = box.state.claimKeptUntil
                }
                guard steps() else { return false }
                slot.made = Box(State(movedTo: url, claimKeptUntil: slot.claimKeptUntil))
                return true
            }
        }

        /// Whether the state was made (for tests).
        var isMade: Bool {
            slot.withLock { $0.made != nil }
        }

        /// The slot's state, made now if it was not.
        private static func made(_ slot: inout Slot) -> Box {
            if let made = slot.made { return made }
            let box = Box(State(claimKeptUntil: slot.claimKeptUntil))
            slot.made = box
            return box
        }

        /// `State.sizeShown`, without making the state when it is not made
        /// (a listing `stat`s every file): the feed's claim, kept for
        /// `timeout` and remembered as such.
        func sizeShown(feedLength: Int64?, timeout: Double, now: Double) -> (size: Int64, timeout: Double) {
            slot.withLock { slot in
                if let box = slot.made {
                    return box.state.sizeShown(feedLength: feedLength, timeout: timeout, now: now)
                }
                slot.claimKeptUntil = max(slot.claimKeptUntil, now + timeout + 1)
                return (feedLength ?? 0, timeout)
            }
        }
    }
}

extension EpisodeRecord {
    /// Whether the index holds anything of the episode's state: a length,
    /// a validator, ranges, a variant mark or a last read. A record
    /// without is a state not made yet (`Episode.StateCell`).
    var holdsState: Bool {
        length != nil || etag != nil || lastModified != nil || !ranges.isEmpty || lastRead != nil
            || variant != EpisodeVariant()
    }
}
