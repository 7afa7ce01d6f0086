import FUSEBridge
import Locking
import Synchronization

/// What the reader tells the kernel: the number of each file it opens, and
/// which sizes and pages of an episode to drop when they changed under the
/// kernel's caches.
final class KernelChannel: Sendable {
    private let nextHandle = Atomic<UInt64>(1)
    /// Set while a session is mounted (`EpisodeReader.attach`).
    private let invalidator: Locked<(any KernelCacheInvalidator)?> = Locked(nil)

    /// A number for an open file, never given before in this mount.
    func newHandle() -> UInt64 {
        nextHandle.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// The session to tell, if one is mounted.
    var session: (any KernelCacheInvalidator)? {
        invalidator.withLock { $0 }
    }

    /// Tells `invalidator` from now on (`nil`: nobody).
    func attach(_ invalidator: (any KernelCacheInvalidator)?) {
        self.invalidator.withLock { $0 = invalidator }
    }
}
