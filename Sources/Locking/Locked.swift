#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`: the one lock type in podfs.
///
/// Why not `Synchronization.Mutex`: on Linux it is built on raw futex
/// system calls that ThreadSanitizer cannot see, so every access it guards
/// is reported as a race and real races drown in the noise. TSan intercepts
/// `pthread_mutex_lock`, so with this type a TSan report means a real bug.
/// The API mirrors `Mutex.withLock` so the two read the same.
///
/// A struct around one object, which holds the value and, allocated with
/// it, the mutex: a lock is one allocation, not two (an episode's state and
/// a fetch's parts each have theirs, made on the path of a first byte).
/// Copies share the object, as references to a class would.
public struct Locked<Value>: @unchecked Sendable {
    // MARK: - Nested types

    /// The value in the header, the mutex as the one tail element: its
    /// address never moves (pthread requires that). The init and
    /// `withLock` are inlinable, so each caller's code is made for its own
    /// value type (unspecialised, they would look up the generic
    /// storage's metadata on every call).
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    // MARK: - Properties

    /// Internal for the inlinable methods only.
    @usableFromInline
    let storage: Storage

    // MARK: - Init

    @inlinable
    public init(_ value: sending Value) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(mutex, nil)
        }
    }

    // MARK: - Public methods

    /// Runs `body` with exclusive access to the value. Not reentrant: do not
    /// call `withLock` on the same instance from inside `body`.
    @inlinable
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        let mutex = storage.mutex
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.header)
    }
}

extension Locked.Storage {
    /// The mutex, at the address it keeps while the object lives.
    @inlinable
    var mutex: UnsafeMutablePointer<pthread_mutex_t> {
        withUnsafeMutablePointerToElements { $0 }
    }
}
