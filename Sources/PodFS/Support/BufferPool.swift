import Glibc
import Locking

/// Reusable buffers of one size, mapped straight from the kernel.
///
/// Body chunks and read replies are large (512 KiB to 1 MiB) and pass
/// between threads. Taken from malloc, each thread's arena would keep the
/// freed memory, and the daemon's footprint would creep up with the number
/// of threads that ever touched one. Here a buffer is an anonymous mapping:
/// at most `limit` spare ones are kept for reuse (no page faults, no
/// zeroing), and the rest go back to the kernel at once.
final class BufferPool: Sendable {
    // MARK: - Properties

    /// The size of every buffer this pool hands out.
    let capacity: Int

    private let limit: Int
    /// Buffers ready for reuse. Guarded by its lock.
    private let spare = Locked<[BufferBox]>([])

    // MARK: - Init and deinit

    /// Buffers of `capacity` bytes; keeps at most `limit` spare ones.
    init(capacity: Int, limit: Int) {
        self.capacity = capacity
        self.limit = limit
    }

    deinit {
        spare.withLock { buffers in
            for box in buffers { Self.unmap(box.buffer) }
        }
    }

    // MARK: - Methods

    /// A buffer of `capacity` bytes (or of `count`, when more is needed).
    func take(atLeast count: Int = 0) -> UnsafeMutableRawBufferPointer {
        if count <= capacity, let box = spare.withLock({ $0.popLast() }) { return box.buffer }
        return Self.map(max(count, capacity))
    }

    /// Maps up to `count` spare buffers with their pages already in memory.
    func prefill(_ count: Int) {
        let missing = spare.withLock { max(0, min(count, limit) - $0.count) }
        for _ in 0..<missing { give(Self.map(capacity, populate: true)) }
    }

    /// Gives back a buffer from `take`.
    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let kept = buffer.count == capacity && spare.withLock { buffers -> Bool in
            guard buffers.count < limit else { return false }
            buffers.append(BufferBox(buffer: buffer))
            return true
        }
        if !kept { Self.unmap(buffer) }
    }

    // MARK: - Private methods

    private static func map(_ count: Int, populate: Bool = false) -> UnsafeMutableRawBufferPointer {
        let flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0)
        let address = mmap(nil, count, PROT_READ | PROT_WRITE, flags, -1, 0)
        guard let address, address != MAP_FAILED else {
            // Out of address space or memory: nothing sensible is left to do.
            fatalError("podfs: could not map \(count) bytes of memory (errno \(errno))")
        }
        return UnsafeMutableRawBufferPointer(start: address, count: count)
    }

    private static func unmap(_ buffer: UnsafeMutableRawBufferPointer) {
        if let base = buffer.baseAddress { munmap(base, buffer.count) }
    }
}

/// Lets a buffer sit in a `Locked` array (only one party owns it at a time).
private struct BufferBox: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
}
