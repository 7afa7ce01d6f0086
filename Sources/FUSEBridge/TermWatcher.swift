import Glibc

/// Waits for SIGTERM on a thread of its own (`sigwait`), so a stop request
/// can be handled with more than a signal handler may do: see
/// `FUSESession.serve(termGrace:)`.
///
/// SIGTERM is blocked in the calling thread before the loop starts, so the
/// loop's worker threads inherit the mask and only this thread takes it.
enum TermWatcher {
    // MARK: - Nested types

    /// What the thread needs, passed through its start argument.
    private final class Context {
        let session: FUSESession
        let grace: Double

        init(session: FUSESession, grace: Double) {
            self.session = session
            self.grace = grace
        }
    }

    // MARK: - Methods

    /// Blocks SIGTERM in the calling thread and starts the watcher.
    static func start(session: FUSESession, grace: Double) {
        var term = sigset_t()
        sigemptyset(&term)
        sigaddset(&term, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &term, nil)
        let context = Unmanaged.passRetained(Context(session: session, grace: grace)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let context = Unmanaged<Context>.fromOpaque(argument).takeRetainedValue()
            // Only SIGTERM is taken here; the others stay with the loop.
            var others = sigset_t()
            sigemptyset(&others)
            for signal in [SIGINT, SIGHUP, SIGQUIT, SIGTERM] { sigaddset(&others, signal) }
            pthread_sigmask(SIG_BLOCK, &others, nil)
            var term = sigset_t()
            sigemptyset(&term)
            sigaddset(&term, SIGTERM)
            var received: Int32 = 0
            while sigwait(&term, &received) != 0 {}
            context.session.detachThenStop(grace: context.grace)
            return nil
        }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Context>.fromOpaque(context).release()
        }
    }
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
