import Foundation
import Locking

/// Turns SIGINT and SIGTERM into a flag the reading loop checks, and a
/// second Ctrl-C into an immediate exit.
final class Stopper: Sendable {
    private let stopped = Locked(false)
    /// Kept alive for the process's life; never touched after init.
    private let sources: Locked<[any DispatchSourceSignal]>

    init() {
        let queue = DispatchQueue(label: "podfs.prefetch.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            sources.append(source)
        }
        for source in sources {
            source.setEventHandler { [stopped] in
                let again = stopped.withLock { value in
                    defer { value = true }
                    return value
                }
                if again { Foundation.exit(130) }
            }
            source.resume()
        }
        self.sources = Locked(sources)
        // Unblock them: swift test, nohup and friends may hand us a mask.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    var isStopped: Bool { stopped.withLock { $0 } }
}
