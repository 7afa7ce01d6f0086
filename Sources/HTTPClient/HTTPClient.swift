internal import CCurl
import Foundation
public import Logging
import Locking

/// An HTTP client on libcurl's multi interface, driven by one thread of its
/// own.
///
/// Every transfer runs on that thread, so connections are kept alive and
/// reused across requests (libcurl's connection cache lives in the multi
/// handle). Delegates are called on that thread and must not block.
public final class HTTPClient: Sendable {
    // MARK: - Nested types

    /// A handle to cancel a started transfer.
    public struct TransferID: Sendable, Hashable {
        fileprivate let raw: UInt64
    }

    /// Work handed to the network thread.
    private enum Command {
        case start(Transfer)
        case cancel(UInt64)
    }

    /// Guarded by `state`'s lock: commands not yet picked up, and whether the
    /// loop should stop.
    private struct SharedState {
        var commands: [Command] = []
        var nextID: UInt64 = 1
        var running = true
        /// The loop is in `curl_multi_poll`, or about to be: a new command
        /// must wake it.
        var loopSleeps = false

        /// Whether the command just queued must wake the loop: not when
        /// one queued before already did, nor when the loop is awake (it
        /// looks at the queue under this lock before it sleeps).
        var wakesLoop: Bool { loopSleeps && commands.count == 1 }
    }

    /// Lives on the network thread only.
    private final class LoopState {
        var active: [UInt64: Transfer] = [:]
    }

    // MARK: - Properties

    private let multi: MultiHandle
    private let state = Locked(SharedState())
    private let logger: Logger
    private let userAgent: String
    /// The address-zone rule every transfer is held to.
    private let policy: AddressPolicy
    /// The proxy every transfer goes through (`-o proxy=`); `nil`: none,
    /// whatever the environment says.
    private let proxy: HTTPProxy?
    private let finished = DispatchSemaphore(value: 0)
    /// Wakes the network thread from `curl_multi_poll` when commands
    /// arrive: an eventfd, which costs the waker less than libcurl's own
    /// `curl_multi_wakeup` (a socket pair here). Written only when the
    /// queue was empty; the loop looks at the queue again before it
    /// sleeps, so commands queued from its own callbacks need no write.
    private let wakeup = Wakeup()
    /// Easy handles of ended transfers, for the next ones.
    private let handles = EasyHandles()

    // MARK: - Init and deinit

    /// Starts the network thread.
    public init(
        logger: Logger, userAgent: String = "podfs/0.1", policy: AddressPolicy = AddressPolicy(), proxy: HTTPProxy? = nil
    ) {
        curl_global_init(Int(CURL_GLOBAL_ALL))
        self.multi = MultiHandle()
        self.logger = logger
        self.userAgent = userAgent
        self.policy = policy
        self.proxy = proxy
        let thread = Thread { [self] in
            blockTerminationSignals()
            self.runLoop()
            self.finished.signal()
        }
        thread.name = "podfs-http"
        thread.start()
    }

    // MARK: - Public methods

    /// Starts a transfer; the delegate hears about it on the network thread.
    @discardableResult
    public func start(_ request: HTTPRequest, delegate: any HTTPTransferDelegate) -> TransferID {
        let outcome: (TransferID, Transfer?, wake: Bool) = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            guard state.running,
                let transfer = Transfer(request: request, delegate: delegate, id: id, policy: policy, handles: handles)
            else {
                return (TransferID(raw: id), nil, false)
            }
            state.commands.append(.start(transfer))
            return (TransferID(raw: id), transfer, state.wakesLoop)
        }
        if outcome.wake { wakeup.wake() }
        if outcome.1 == nil {
            delegate.complete(error: HTTPError(kind: .cancelled, message: "the HTTP client is shut down", url: request.url))
        }
        return outcome.0
    }

    /// Aborts a transfer; its delegate gets `complete` with `.cancelled`
    /// unless it already completed.
    public func cancel(_ id: TransferID) {
        let wake = state.withLock { state in
            state.commands.append(.cancel(id.raw))
            return state.wakesLoop
        }
        if wake { wakeup.wake() }
    }

    /// Stops the network thread after cancelling every transfer; waits for it.
    public func shutdown() {
        let wasRunning = state.withLock { state -> Bool in
            let was = state.running
            state.running = false
            return was
        }
        guard wasRunning else { return }
        wakeup.wake()
        finished.wait()
    }

    // MARK: - Network thread

    private func runLoop() {
        let loop = LoopState()
        while true {
            let (commands, running) = state.withLock { state in
                let commands = state.commands
                state.commands.removeAll()
                return (commands, state.running)
            }
            for command in commands {
                switch command {
                case .start(let transfer):
                    let userdata = Unmanaged.passUnretained(transfer).toOpaque()
                    transfer.configure(userdata: userdata, userAgent: userAgent, proxy: proxy)
                    loop.active[transfer.id] = transfer
                    curl_multi_add_handle(multi.handle, transfer.easy)
                case .cancel(let id):
                    if let transfer = loop.active.removeValue(forKey: id) {
                        curl_multi_remove_handle(multi.handle, transfer.easy)
                        transfer.finishCancelled()
                    }
                }
            }
            if !running {
                for transfer in loop.active.values {
                    curl_multi_remove_handle(multi.handle, transfer.easy)
                    transfer.finishCancelled()
                }
                loop.active.removeAll()
                return
            }
            var stillRunning: Int32 = 0
            curl_multi_perform(multi.handle, &stillRunning)
            for transfer in loop.active.values { transfer.endBodyBatch() }
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.handle, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                var pointer: UnsafeMutableRawPointer?
                podfs_curl_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &pointer)
                let transfer = Transfer.from(userdata: pointer)
                curl_multi_remove_handle(multi.handle, easy)
                loop.active.removeValue(forKey: transfer.id)
                transfer.finish(code: code)
            }
            // Commands queued meanwhile (a callback's new transfer) are
            // taken at once; else the loop says it sleeps, and a command
            // queued from now on writes the eventfd.
            let idle = state.withLock { state in
                state.loopSleeps = state.commands.isEmpty && state.running
                return state.loopSleeps
            }
            guard idle else { continue }
            var extra = curl_waitfd(fd: wakeup.descriptor, events: Int16(CURL_WAIT_POLLIN), revents: 0)
            var numfds: Int32 = 0
            curl_multi_poll(multi.handle, &extra, 1, 1000, &numfds)
            state.withLock { $0.loopSleeps = false }
            if extra.revents != 0 { wakeup.drain() }
        }
    }
}

/// An eventfd the network thread polls beside libcurl's sockets.
private final class Wakeup: Sendable {
    let descriptor: Int32

    init() {
        descriptor = podfs_wakeup_eventfd()
        precondition(descriptor >= 0, "eventfd failed: \(String(cString: strerror(errno)))")
    }

    deinit {
        close(descriptor)
    }

    /// Makes the descriptor readable (a counter: many writes, one wake).
    func wake() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }

    /// Reads the counter back to zero.
    func drain() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, 8)
    }
}

/// Owns the multi handle; freed when the client goes away.
private final class MultiHandle: Sendable {
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer

    init() {
        handle = curl_multi_init()
        // Keep plenty of idle connections so read-ahead and readers reuse them.
        podfs_curl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, 32)
    }

    deinit {
        curl_multi_cleanup(handle)
    }
}

/// Blocks the signals libfuse waits for, so they reach the FUSE loop's thread
/// (docs/FUSE-SWIFT-NOTES.md, "Signals": a signal caught here would hang
/// the loop).
func blockTerminationSignals() {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&set, signal) }
    pthread_sigmask(SIG_BLOCK, &set, nil)
}
