import Foundation
import Locking
import RangeCache

/// Reads episodes through a mount to the end, one after another, and shows
/// the progress: on a terminal a live bar for the current episode and a
/// total line (bytes, rate, time left); otherwise plain lines.
///
/// Bytes fetched are measured by the mount (`user.podfs.cached_bytes`), so
/// the rate and time left count the network only, not bytes served from
/// the cache.
struct PrefetchRun: Sendable {
    // MARK: - Nested types

    /// Guarded by `progress`'s lock.
    private struct Progress {
        var current = 0
        /// Bytes read of the current episode.
        var position: Int64 = 0
        var finished = false
        var failures: [String] = []
    }

    // MARK: - Properties

    private let episodes: [PrefetchEpisode]
    private let stopper: Stopper
    private let onStop: @Sendable () -> Void
    private let progress = Locked(Progress())
    private let terminal = isatty(STDOUT_FILENO) == 1
    private let readSize = 256 * 1024

    // MARK: - Init

    /// - Parameter onStop: called once on Ctrl-C, to end reads in flight.
    init(episodes: [PrefetchEpisode], stopper: Stopper, onStop: @escaping @Sendable () -> Void) {
        self.episodes = episodes
        self.stopper = stopper
        self.onStop = onStop
    }

    // MARK: - Methods

    /// Reads everything; 0 when all is cached, 1 when an episode failed,
    /// 130 when stopped.
    func run() -> Int32 {
        let initial = episodes.map { cachedBytes($0) ?? 0 }
        let total = episodes.reduce(Int64(0)) { $0 + $1.size }
        let toFetch = zip(episodes, initial).reduce(Int64(0)) { $0 + max(0, $1.0.size - $1.1) }
        say(
            "prefetch: \(episodes.count) episode\(episodes.count == 1 ? "" : "s"), \(CacheMaintenance.bytes(total)), "
                + "\(CacheMaintenance.bytes(toFetch)) to fetch")
        let started = monotonicNow()
        let thread = Thread { [self] in readAll() }
        thread.stackSize = 1 << 20
        thread.start()
        var fetched = Array(repeating: Int64(0), count: episodes.count)
        var reported = 0
        var episodeStarted = started
        while true {
            let state = progress.withLock { $0 }
            if state.current < episodes.count, let now = cachedBytes(episodes[state.current]) {
                fetched[state.current] = max(fetched[state.current], now - initial[state.current])
            }
            while reported < state.current {
                if let now = cachedBytes(episodes[reported]) { fetched[reported] = max(0, now - initial[reported]) }
                finishLine(reported, fetched: fetched[reported], seconds: monotonicNow() - episodeStarted, failures: state.failures)
                episodeStarted = monotonicNow()
                reported += 1
            }
            let fetchedTotal = fetched.reduce(0, +)
            if state.finished { break }
            if terminal {
                draw(state, fetched: fetchedTotal, toFetch: toFetch, elapsed: monotonicNow() - started)
            }
            if stopper.isStopped {
                // Ends reads in flight (or not: the summary does not wait).
                onStop()
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let state = progress.withLock { $0 }
        let elapsed = monotonicNow() - started
        let fetchedTotal = fetched.reduce(0, +)
        let rate = elapsed > 0 ? Double(fetchedTotal) / elapsed : 0
        if stopper.isStopped {
            say(
                "prefetch: stopped after \(state.current) of \(episodes.count) episodes, \(CacheMaintenance.bytes(fetchedTotal)) "
                    + "fetched; what was fetched stays cached: run the same command again to resume")
            return 130
        }
        say(
            "prefetch: done: \(episodes.count - state.failures.count) of \(episodes.count) episodes cached, "
                + "\(CacheMaintenance.bytes(fetchedTotal)) fetched in \(Self.duration(elapsed)) (\(CacheMaintenance.bytes(Int64(rate)))/s)")
        for failure in state.failures { Console.error("podfs: \(failure)\n") }
        return state.failures.isEmpty ? 0 : 1
    }

    // MARK: - Private methods

    /// The reading thread: each episode from start to end.
    private func readAll() {
        var buffer = [UInt8](repeating: 0, count: readSize)
        for (position, episode) in episodes.enumerated() {
            progress.withLock {
                $0.current = position
                $0.position = 0
            }
            if stopper.isStopped { break }
            let descriptor = open(episode.path, O_RDONLY | O_CLOEXEC)
            if descriptor < 0 {
                let reason = String(cString: strerror(errno))
                progress.withLock { $0.failures.append("\(episode.label): cannot open: \(reason)") }
                continue
            }
            var offset: Int64 = 0
            while !stopper.isStopped {
                let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, readSize, off_t(offset)) }
                if count < 0, errno == EINTR { continue }
                if count < 0 {
                    let reason = String(cString: strerror(errno))
                    if !stopper.isStopped {
                        progress.withLock {
                            $0.failures.append(
                                "\(episode.label): read failed at byte \(offset): \(reason) (see the mount's log; "
                                    + "run prefetch again to retry)")
                        }
                    }
                    break
                }
                if count == 0 { break }
                offset += Int64(count)
                progress.withLock { $0.position = offset }
            }
            close(descriptor)
        }
        progress.withLock {
            if !stopper.isStopped { $0.current = episodes.count }
            $0.finished = true
        }
    }

    /// One line for a finished episode (both modes).
    private func finishLine(_ position: Int, fetched: Int64, seconds: Double, failures: [String]) {
        let episode = episodes[position]
        if failures.contains(where: { $0.hasPrefix(episode.label + ":") }) {
            say("  failed  \(episode.label)")
            return
        }
        let detail = fetched > 0
            ? "\(CacheMaintenance.bytes(fetched)) fetched in \(Self.duration(seconds))" : "already cached"
        say("  done    \(episode.label)  \(CacheMaintenance.bytes(episode.size))  (\(detail))")
    }

    /// The two live lines: the current episode's bar and the total.
    private func draw(_ state: Progress, fetched: Int64, toFetch: Int64, elapsed: Double) {
        guard state.current < episodes.count else { return }
        let episode = episodes[state.current]
        let fraction = episode.size > 0 ? Double(state.position) / Double(episode.size) : 1
        let rate = elapsed > 0.5 ? Double(fetched) / elapsed : 0
        let left = toFetch - fetched
        let eta = rate > 0 ? Self.duration(Double(max(0, left)) / rate) : "--:--"
        let width = Self.columns()
        let label = Self.fit(episode.label, max(10, width - 52))
        let line1 = "  \(label)  \(Self.bar(fraction, 20)) \(Self.leftPad("\(Int(fraction * 100))%", 4))  "
            + "\(CacheMaintenance.bytes(state.position)) of \(CacheMaintenance.bytes(episode.size))"
        let line2 = "  total: episode \(state.current + 1) of \(episodes.count), \(CacheMaintenance.bytes(fetched)) of "
            + "\(CacheMaintenance.bytes(toFetch)) fetched, \(CacheMaintenance.bytes(Int64(rate)))/s, ETA \(eta)"
        let out = "\r\u{1b}[K" + Self.fit(line1, width - 1) + "\n\u{1b}[K" + Self.fit(line2, width - 1) + "\u{1b}[1A\r"
        Console.out(out)
    }

    /// A line above the live lines (or a plain line).
    private func say(_ line: String) {
        // On a terminal the cursor is on the bar line, the total below it:
        // overwrite the bar, then clear the old total (the next draw goes
        // under this line).
        let out = terminal ? "\r\u{1b}[K" + line + "\n\u{1b}[K" : line + "\n"
        Console.out(out)
    }

    private func cachedBytes(_ episode: PrefetchEpisode) -> Int64? {
        attribute(episode.path, "user.podfs.cached_bytes").flatMap { Int64($0) }
    }

    private static func bar(_ fraction: Double, _ width: Int) -> String {
        let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded(.down))
        return "[" + String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled) + "]"
    }

    private static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 else { return 80 }
        return Int(size.ws_col)
    }

    private static func fit(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(max(1, width - 1))) + "…"
    }

    private static func leftPad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole < 60 { return seconds < 10 ? String(format: "%.1f s", seconds) : "\(whole) s" }
        return whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }
}

private func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
