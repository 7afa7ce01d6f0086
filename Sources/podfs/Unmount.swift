import ArgumentParser
import Foundation

/// `podfs unmount MOUNTPOINT`: unmounts and waits until the daemon saved
/// its index and exited.
struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unmount a podfs mount and wait for its daemon to save the cache index.")

    @Argument(help: "The mount point.")
    var mountpoint: String

    func run() throws {
        let path = absolutePath(mountpoint)
        let daemons = MountTable.daemonPIDs(mountpoint: path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "fusermount3 -u \"$1\" 2>&1 || umount \"$1\" 2>&1", "sh", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            var message = "could not unmount \(path): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
            if output.contains("busy") {
                message += "\nA program still has a file open there; close it (see: fuser -vm \(path)) and try again."
            }
            FileHandle.standardError.write(Data("podfs: \(message)\n".utf8))
            throw ExitCode(1)
        }
        // The daemon commits its index on the way out; a remount right after
        // must see it, so wait for the daemon to end.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, daemons.contains(where: { kill($0, 0) == 0 && !MountTable.isZombie($0) }) {
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}

/// Finds podfs daemons by their command line.
enum MountTable {
    /// PIDs of podfs processes serving `mountpoint` (its last argument).
    static func daemonPIDs(mountpoint: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            let argv = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let first = argv.first, first.hasSuffix("podfs"), argv.contains("--daemon-child") || argv.contains("-f"),
                argv.last == mountpoint
            else { return nil }
            return pid
        }
    }

    static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)] == "Z"
    }
}
