import ArgumentParser
import Foundation

/// `podfs unmount MOUNTPOINT`: unmounts and waits until the daemon saved
/// its index and exited.
struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unmount a podfs mount and wait for its daemon to save the cache index.")

    @Argument(help: "The mount point.")
    var mountpoint: String

    @Flag(
        name: [.customShort("z"), .long],
        help: ArgumentHelp(
            "Detach now even if files are open; the daemon serves them until closed, then saves and exits.",
            discussion: "Without it, unmounting a mount with open files fails and says which programs to close."))
    var lazy = false

    func run() throws {
        let path = absolutePath(mountpoint)
        let daemons = MountTable.daemonPIDs(mountpoint: path)
        guard let type = MountTable.fileSystemType(path) else {
            let missing = !FileManager.default.fileExists(atPath: path)
            Console.error("podfs: \(path) \(missing ? "does not exist" : "is not mounted"); nothing to do.\n")
            throw ExitCode(1)
        }
        guard type == MountTable.podfsType else {
            Console.error(
                "podfs: \(path) is not a podfs mount (it is \(type)); nothing was unmounted. "
                    + "podfs unmount only unmounts podfs; use umount for other file systems.\n")
            throw ExitCode(1)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let flag = lazy ? "-z" : ""
        process.arguments = ["-c", "fusermount3 -u \(flag) \"$1\" 2>&1 || umount \(lazy ? "-l" : "") \"$1\" 2>&1", "sh", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            var message = "could not unmount \(path): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
            if output.contains("busy") {
                message += "\nA program still has a file open there; close it (see: fuser -vm \(path)) and try again, "
                    + "or detach now with podfs unmount --lazy \(path) (open files keep working until closed)."
            }
            Console.error("podfs: \(message)\n")
            throw ExitCode(1)
        }
        if lazy {
            // The daemon ends when the last open file closes; not waited for.
            let open = daemons.filter { kill($0, 0) == 0 && !MountTable.isZombie($0) }
            if !open.isEmpty {
                print("podfs: detached \(path); its daemon saves and exits once the files still open there are closed")
            }
            return
        }
        // The daemon commits its index on the way out; a remount right after
        // must see it, so wait for the daemon to end.
        let deadline = Date().addingTimeInterval(30)
        func running() -> [pid_t] { daemons.filter { kill($0, 0) == 0 && !MountTable.isZombie($0) } }
        while Date() < deadline, !running().isEmpty {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let left = running()
        if !left.isEmpty {
            Console.error(
                "podfs: unmounted \(path), but its daemon (pid \(left.map(String.init).joined(separator: ", "))) "
                    + "is still saving after 30 s; a remount waits for it. See the log in the cache directory.\n")
        }
    }
}

/// Finds podfs daemons by their command line.
enum MountTable {
    /// PIDs of podfs processes serving `mountpoint` (its last argument):
    /// a command named podfs, or this very program under another name (a
    /// build copied aside for a benchmark), whose daemon `podfs unmount`
    /// would otherwise not wait for.
    static func daemonPIDs(mountpoint: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let me = executable(of: "self")
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(),
                let argv = ProcessCommandLine.arguments(pid: entry)?.filter({ !$0.isEmpty })
            else { return nil }
            guard let first = argv.first, argv.contains("--daemon-child") || argv.contains("-f"),
                argv.last == mountpoint,
                first.hasSuffix("podfs") || (me != nil && executable(of: entry) == me)
            else { return nil }
            return pid
        }
    }

    /// The program process `entry` (a PID or "self") runs, from /proc.
    private static func executable(of entry: String) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/exe")
    }

    /// Whether `path` is a mount point now (per /proc/mounts, whose octal
    /// escapes for spaces and tabs are decoded).
    /// The file system type of every podfs mount (FUSESession's `subtype`).
    static let podfsType = "fuse.podfs"

    static func isMounted(_ path: String) -> Bool { fileSystemType(path) != nil }

    /// Whether a podfs mount is on `path` now.
    static func isPodfsMount(_ path: String) -> Bool { fileSystemType(path) == podfsType }

    /// The file system type of the mount on `path` (`fuse.podfs`; the top
    /// one, where mounts are stacked), or `nil` where nothing is mounted.
    static func fileSystemType(_ path: String) -> String? {
        let table = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        let line = table.split(separator: "\n").last { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && decoded(fields[1]) == path
        }
        return line.map { String($0.split(separator: " ")[2]) }
    }

    /// A path as the mount table writes it: spaces, tabs and backslashes
    /// in octal escapes.
    private static func decoded(_ field: Substring) -> String {
        field
            .replacingOccurrences(of: "\\040", with: " ")
            .replacingOccurrences(of: "\\011", with: "\t")
            .replacingOccurrences(of: "\\134", with: "\\")
    }

    static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)] == "Z"
    }
}
