import Foundation

/// The process's resident memory as Linux reports it in `/proc/self/status`.
///
/// Peak figures are for the whole process, so tests that read them run in
/// one serialized suite and allow for what other suites allocate meanwhile.
enum ProcessMemory {
    // MARK: - Methods

    /// `VmHWM`: the peak resident set size so far, in bytes.
    static func peakResidentBytes() -> Int? {
        field("VmHWM")
    }

    /// `VmRSS`: the resident set size now, in bytes.
    static func residentBytes() -> Int? {
        field("VmRSS")
    }

    /// Resets `VmHWM` to the current resident size (Linux 4.0 and later;
    /// silently does nothing where `clear_refs` is not writable).
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .ascii)
    }

    /// Runs `body` and returns how far the peak resident size rose above the
    /// resident size before it, in bytes. Where the peak cannot be reset,
    /// only a rise above the earlier peak counts (an underestimate).
    static func peakGrowth(during body: () throws -> Void) rethrows -> Int? {
        resetPeak()
        guard let before = residentBytes(), let peakBefore = peakResidentBytes() else {
            try body()
            return nil
        }
        try body()
        guard let peak = peakResidentBytes() else { return nil }
        return max(0, peak - max(before, peakBefore))
    }

    static func megabytes(_ bytes: Int?) -> String {
        guard let bytes else { return "unknown" }
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MB"
    }

    // MARK: - Private methods

    private static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
            return Int(digits).map { $0 * 1024 }
        }
        return nil
    }
}
