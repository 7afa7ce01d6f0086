import Feeds
import Foundation

/// The mount `podfs prefetch` reads through: the running mount that holds
/// the cache directory, or a private one it starts on a temporary directory
/// and stops when done.
///
/// Reading through a mount keeps one process writing a cache (the daemon
/// holds the cache lock) and one download path (the mount's reader), so a
/// prefetch and a mount share a cache safely and fetch each byte once.
struct PrefetchMount {
    // MARK: - Properties

    let mountpoint: String
    /// The daemon this prefetch started, `nil` when it borrows a user's mount.
    let ownDaemon: pid_t?

    // MARK: - Init

    /// Borrows the mount that uses `cacheDirectory`, else mounts `sources`
    /// on a new temporary directory with the cache (and the `-o` options).
    init(cacheDirectory: String, sources: [String], options: [String], executable: String) throws {
        if let existing = Self.mountUsing(cacheDirectory: cacheDirectory) {
            mountpoint = existing
            ownDaemon = nil
            return
        }
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? NSTemporaryDirectory()
        var template = Array((base + "/podfs-prefetch-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw PrefetchError("cannot create a temporary mount point in \(base): \(String(cString: strerror(errno)))")
        }
        let directory = (String(cString: made) as NSString).standardizingPath
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["mount", "--cache-dir", cacheDirectory] + options.flatMap { ["-o", $0] } + sources + [directory]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let range = output.range(of: "(pid "), let pid = pid_t(output[range.upperBound...].prefix { $0.isNumber })
        else {
            rmdir(directory)
            throw PrefetchError("could not mount the feeds to prefetch them (see the message above)")
        }
        mountpoint = directory
        ownDaemon = pid
    }

    // MARK: - Methods

    /// Stops a daemon this prefetch started: SIGTERM unmounts it even with
    /// a read in flight (that read fails with EIO); the daemon saves the
    /// index first. Waits for it to exit, then removes the directory.
    func stop() {
        guard let pid = ownDaemon else { return }
        // Called again after a Ctrl-C already stopped it: nothing to do.
        guard FileManager.default.fileExists(atPath: mountpoint) else { return }
        if MountTable.isMounted(mountpoint) { kill(pid, SIGTERM) }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, kill(pid, 0) == 0, !MountTable.isZombie(pid) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if MountTable.isMounted(mountpoint) {
            _ = try? Process.run(URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "fusermount3 -u -z \"$1\"", "sh", mountpoint])
                .waitUntilExit()
        }
        rmdir(mountpoint)
    }

    /// The mount point of a running podfs mount whose cache is
    /// `cacheDirectory` (found by its daemon's command line: `--cache-dir`
    /// or `-o cache_dir=`), or `nil`.
    static func mountUsing(cacheDirectory: String) -> String? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry), pid != getpid(), let argv = ProcessCommandLine.arguments(pid: entry)
            else { continue }
            guard let first = argv.first, first.hasSuffix("podfs"), argv.contains("mount"),
                argv.contains("--daemon-child") || argv.contains("-f") || argv.contains("-d"),
                // The last argument that is a podfs mount (in mount.fuse3's
                // form the -o list follows it).
                let mountpoint = argv.reversed().first(where: MountTable.isPodfsMount)
            else { continue }
            let cwd = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/cwd")) ?? "/"
            if Self.cacheDirectory(argv: argv, cwd: cwd) == cacheDirectory { return mountpoint }
        }
        return nil
    }

    // MARK: - Private methods

    private static func cacheDirectory(argv: [String], cwd: String) -> String? {
        var found: String?
        for (position, argument) in argv.enumerated() {
            if argument == "--cache-dir", position + 1 < argv.count { found = argv[position + 1] }
            if argument.hasPrefix("--cache-dir=") { found = String(argument.dropFirst("--cache-dir=".count)) }
            if argument == "-o", position + 1 < argv.count {
                for option in MountOptions.split(argv[position + 1]) where option.hasPrefix("cache_dir=") {
                    found = found ?? String(option.dropFirst("cache_dir=".count))
                }
            }
        }
        guard let found else { return nil }
        if found.hasPrefix("/") { return (found as NSString).standardizingPath }
        return ((cwd as NSString).appendingPathComponent(found) as NSString).standardizingPath
    }
}

/// Why a prefetch cannot go on, in words a person can act on.
struct PrefetchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
