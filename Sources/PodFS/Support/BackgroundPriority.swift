import Foundation
import Glibc

/// The CPU share of threads whose work nobody waits on at this moment:
/// building and refreshing shows, the keeper's planning.
public enum BackgroundPriority {
    /// How much less the calling thread gets than a FUSE worker when both
    /// want a core: nice 10 weighs 110 against nice 0's 1,024 in Linux's
    /// scheduler, so a listing or a read runs at once while feeds build,
    /// and the builds take every core nobody else wants.
    static let niceness: Int32 = 10

    /// Lowers the calling thread's priority (Linux keeps the nice value per
    /// thread; threads it starts inherit it). Lowering one's own priority
    /// needs no privilege; a failure leaves the thread as it was.
    public static func lowerCallingThread() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
    }

    /// Starts a thread of the mount's background work, named `name`: the
    /// termination signals blocked (SIGINT, SIGTERM and SIGHUP are the FUSE
    /// loop's to take; one taken here would skip the open files' grace),
    /// its priority lowered (a listener's reads come first), then `body`.
    public static func startThread(
        named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void
    ) {
        let thread = Thread {
            FeedRound.blockTerminationSignals()
            lowerCallingThread()
            body()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
