import Locking

/// A piece of a response body on its way from the network thread to the
/// scratch file, in memory the chunk owns.
///
/// The network thread fills it (libcurl hands over at most 16 KiB at a
/// time) and then gives it up whole to the episode's writer, so each byte
/// is copied once in memory before the `pwrite`. Only one thread touches a
/// chunk at a time: the hand-off through a dispatch queue orders the
/// accesses. Its memory comes from a `BodyChunk.Pool` and goes back there:
/// fresh memory would cost a page fault and a zeroed page per 4 KiB.
final class BodyChunk: @unchecked Sendable {
    // MARK: - Nested types

    /// Reusable chunk memory, all of one size.
    final class Pool: Sendable {
        let capacity: Int
        private let limit: Int
        /// Buffers ready for reuse. Guarded by its lock.
        private let free = Locked<[UnsafeMutableRawBufferPointerBox]>([])

        /// Buffers of `capacity` bytes; keeps at most `limit` spare ones.
        init(capacity: Int, limit: Int) {
            self.capacity = capacity
            self.limit = limit
        }

        deinit {
            free.withLock { buffers in
                for box in buffers { box.buffer.deallocate() }
            }
        }

        fileprivate func take() -> UnsafeMutableRawBufferPointer {
            if let box = free.withLock({ $0.popLast() }) { return box.buffer }
            return .allocate(byteCount: capacity, alignment: 64)
        }

        fileprivate func give(_ buffer: UnsafeMutableRawBufferPointer) {
            let kept = free.withLock { buffers -> Bool in
                guard buffers.count < limit else { return false }
                buffers.append(UnsafeMutableRawBufferPointerBox(buffer: buffer))
                return true
            }
            if !kept { buffer.deallocate() }
        }
    }

    // MARK: - Properties

    /// The bytes gathered so far.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[0..<count])
    }

    private(set) var count = 0

    var isFull: Bool { count == storage.count }

    private let storage: UnsafeMutableRawBufferPointer
    private let pool: Pool

    // MARK: - Init and deinit

    init(from pool: Pool) {
        self.pool = pool
        storage = pool.take()
    }

    deinit {
        pool.give(storage)
    }

    // MARK: - Methods

    /// Copies as much of `source` as fits; returns how many bytes it took.
    func append(_ source: UnsafeRawBufferPointer) -> Int {
        let taken = min(source.count, storage.count - count)
        guard taken > 0, let base = source.baseAddress else { return 0 }
        UnsafeMutableRawBufferPointer(rebasing: storage[count..<count + taken])
            .copyMemory(from: UnsafeRawBufferPointer(start: base, count: taken))
        count += taken
        return taken
    }
}

/// Lets a buffer pointer sit in a `Locked` array (it is only ever owned by
/// one party at a time).
struct UnsafeMutableRawBufferPointerBox: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
}
