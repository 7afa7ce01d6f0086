#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the one lock type in podfs.
///
/// Why not `Synchronization.Mutex`: on Linux it is built on raw futex
/// system calls that ThreadSanitizer cannot see, so every access it guards
/// is reported as a race and real races drown in the noise. TSan intercepts
/// `pthread_mutex_lock`, so with this type a TSan report means a real bug.
/// The API mirrors `Mutex.withLock` so the two read the same.
public final class Locked<Value>: @unchecked Sendable {
    // MARK: - Private properties

    /// Heap-allocated so its address never moves (pthread requires that).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Touched only while `mutex` is held.
    private var value: Value

    // MARK: - Init and deinit

    public init(_ value: sending Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    // MARK: - Public methods

    /// Runs `body` with exclusive access to the value. Not reentrant: do not
    /// call `withLock` on the same instance from inside `body`.
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
