import Glibc

/// The command line of a running process, from `/proc/PID/cmdline`.
///
/// Read with plain `read(2)`: Foundation's file reading trusts the size
/// `stat` reports, which is 0 for /proc files, and leaks its buffer there.
enum ProcessCommandLine {
    /// The arguments of process `pid` (empty fields kept), or `nil` when it
    /// is gone or unreadable.
    static func arguments(pid: String) -> [String]? {
        let fd = open("/proc/\(pid)/cmdline", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        guard !bytes.isEmpty else { return nil }
        if bytes.last == 0 { bytes.removeLast() }
        return bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }
}
