/// A piece of a response body on its way from the network thread to the
/// scratch file, in memory the chunk owns.
///
/// The network thread fills it (libcurl hands over at most 16 KiB at a
/// time) and then gives it up whole to the episode's writer, so each byte
/// is copied once in memory before the `pwrite`. Only one thread touches a
/// chunk at a time: the hand-off through a dispatch queue orders the
/// accesses. Its memory comes from a `BufferPool` and goes back there:
/// fresh memory would cost a page fault and a zeroed page per 4 KiB.
final class BodyChunk: @unchecked Sendable {
    // MARK: - Properties

    /// The bytes gathered so far.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[0..<count])
    }

    private(set) var count = 0

    var isFull: Bool { count == storage.count }

    private let storage: UnsafeMutableRawBufferPointer
    private let pool: BufferPool

    // MARK: - Init and deinit

    init(from pool: BufferPool) {
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
