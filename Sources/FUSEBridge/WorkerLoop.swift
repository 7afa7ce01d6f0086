internal import CFuse3
import Glibc
import Locking
import Synchronization

/// The signal that asked the loop to stop (0: none yet). Written by the
/// signal handler, so it is a lock-free atomic.
private let stopSignal = Atomic<Int32>(0)

/// Serves one libfuse session with a fixed set of worker threads, each
/// receiving and processing requests until the session ends.
///
/// This replaces `fuse_session_loop_mt`, which ends its workers with
/// `pthread_cancel`: a thread cancelled inside a read cannot clean up, and
/// under the thread sanitizer the daemon aborted at every unmount before its
/// final index commit. Here a worker leaves its loop by itself: on unmount
/// the kernel answers its read with ENODEV (libfuse then marks the session
/// exited), and on a stop request it is woken from its read by a no-op
/// SIGUSR2 (EINTR) and sees the session exited. A read answered with
/// ECONNABORTED ends the loop as an unmount does: the kernel has ended the
/// connection (a write to `/sys/fs/fuse/connections/N/abort`, or, seen on
/// kernel 6.18, the last file of a lazily detached mount closing), and no
/// request can come any more.
///
/// Stop signals (SIGINT, SIGHUP, and SIGTERM unless a watcher takes it) are
/// taken by the thread that calls `run()`: the workers block them.
final class WorkerLoop: Sendable {
    // MARK: - Properties

    private let session: SessionPointer
    private let workerCount: Int
    /// Posted when a worker ends or a stop is requested; `run()` waits on it.
    private let wakeUp: SemaphorePointer
    /// Workers still inside their loop.
    private let running = Locked(0)
    /// The first error a worker's read returned (negative errno), or 0.
    private let failure = Locked<Int32>(0)

    // MARK: - Init

    init(session: SessionPointer, workers: Int) {
        self.session = session
        self.workerCount = max(1, workers)
        self.wakeUp = SemaphorePointer()
    }

    deinit {
        wakeUp.destroy()
    }

    // MARK: - Methods

    /// Serves until the session is unmounted or asked to stop; returns the
    /// number of the signal that stopped it, 0 after an unmount or
    /// `requestStop()`, or a negative errno when the device failed.
    func run() -> Int32 {
        stopSignal.store(0, ordering: .relaxed)
        Self.installHandlers()
        let threads = startWorkers()
        let se = session.raw
        while stopSignal.load(ordering: .relaxed) == 0, fuse_session_exited(se) == 0,
            running.withLock({ $0 }) > 0
        {
            // A signal for this thread interrupts the wait (EINTR); the
            // timeout only covers one arriving just before it began.
            wakeUp.wait(seconds: 0.25)
        }
        fuse_session_exit(se)
        stopWorkers(threads)
        Self.removeHandlers()
        let signal = stopSignal.load(ordering: .relaxed)
        return signal != 0 ? signal : failure.withLock { $0 }
    }

    /// Ends the loop from any thread (as SIGINT does, without a signal).
    func requestStop() {
        fuse_session_exit(session.raw)
        wakeUp.post()
    }

    // MARK: - Private methods

    private func startWorkers() -> [pthread_t] {
        // Workers inherit the mask: they never take a stop signal, and
        // SIGUSR2 is what wakes them.
        var stops = sigset_t()
        sigemptyset(&stops)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&stops, signal) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &stops, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var wake = sigset_t()
        sigemptyset(&wake)
        sigaddset(&wake, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &wake, nil)

        var threads: [pthread_t] = []
        for _ in 0..<workerCount {
            running.withLock { $0 += 1 }
            let context = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, { argument in
                guard let argument else { return nil }
                let loop = Unmanaged<WorkerLoop>.fromOpaque(argument).takeRetainedValue()
                loop.work()
                return nil
            }, context)
            if created == 0 {
                threads.append(thread)
            } else {
                running.withLock { $0 -= 1 }
                Unmanaged<WorkerLoop>.fromOpaque(context).release()
            }
        }
        return threads
    }

    /// One worker: receive a request, process it (the handler replies, or
    /// hands the reply to another thread), until the session ends.
    private func work() {
        let se = session.raw
        var buffer = fuse_buf()
        while fuse_session_exited(se) == 0 {
            let received = fuse_session_receive_buf(se, &buffer)
            if received == -EINTR || received == -EAGAIN { continue }
            if received == -ECONNABORTED {
                fuse_session_exit(se)
                break
            }
            if received <= 0 {
                // 0: unmounted (libfuse has marked the session exited).
                if received < 0 {
                    failure.withLock { if $0 == 0 { $0 = received } }
                    fuse_session_exit(se)
                }
                break
            }
            fuse_session_process_buf(se, &buffer)
        }
        free(buffer.mem)
        running.withLock { $0 -= 1 }
        wakeUp.post()
    }

    /// Wakes every worker still blocked in its read until all have left
    /// their loops, then joins them. A wake-up sent just before a worker
    /// enters its read is lost, so it is repeated.
    private func stopWorkers(_ threads: [pthread_t]) {
        var waited = 0.0
        while running.withLock({ $0 }) > 0 {
            for thread in threads { pthread_kill(thread, SIGUSR2) }
            usleep(10_000)
            waited += 0.01
            // A worker busy in a handler finishes it first; after 30 s
            // something is stuck, and joining would hang the unmount.
            if waited > 30 { return }
        }
        for thread in threads { pthread_join(thread, nil) }
    }

    private static func installHandlers() {
        var action = sigaction()
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a read must return EINTR
        action.__sigaction_handler.sa_handler = { signal in
            stopSignal.store(signal, ordering: .relaxed)
        }
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaction(signal, &action, nil) }
        action.__sigaction_handler.sa_handler = { _ in }
        sigaction(SIGUSR2, &action, nil)
    }

    private static func removeHandlers() {
        for signal in [SIGINT, SIGTERM, SIGHUP] { Glibc.signal(signal, SIG_DFL) }
    }
}

/// A POSIX semaphore on the heap, shared between threads (sem_post and
/// sem_wait are thread-safe).
struct SemaphorePointer: @unchecked Sendable {
    private let raw: UnsafeMutablePointer<sem_t>

    init() {
        raw = .allocate(capacity: 1)
        sem_init(raw, 0, 0)
    }

    func post() { sem_post(raw) }

    /// Waits until posted, a signal arrives, or `seconds` pass.
    func wait(seconds: Double) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(seconds * 1e9)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        sem_timedwait(raw, &deadline)
    }

    func destroy() {
        sem_destroy(raw)
        raw.deallocate()
    }
}
