import Foundation
import TestSupport
import Testing

/// Runs programs for the integration tests and finds the project's parts.
enum Harness {
    /// The repository root (two levels above this file's folder).
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The podfs binary built next to the test bundle (or `PODFS_BIN`).
    static let podfs: String = {
        if let path = ProcessInfo.processInfo.environment["PODFS_BIN"] { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("podfs").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory.deleteLastPathComponent()
        }
        return root + "/.build/debug/podfs"
    }()

    /// The result of a finished program.
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs a program to completion with its own stdout/stderr, killing it
    /// after `timeout` seconds (a hang is a failure, not a stuck suite).
    ///
    /// Spawned with `posix_spawn` and an empty signal mask and default
    /// dispositions: the test runner's threads block most signals, and a
    /// child that inherits a blocked SIGCHLD hangs in the shell's `wait`.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> Output {
        let out = try TempFile()
        let err = try TempFile()
        let pid = try spawn(executable, arguments, stdout: out.handle.fileDescriptor, stderr: err.handle.fileDescriptor)
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid { break }
            if waited < 0, errno != EINTR { throw HarnessError("waitpid \(executable): errno \(errno)") }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw HarnessError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        // WIFEXITED / WEXITSTATUS, spelled out (the C macros do not import).
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Output(
            status: exitStatus, stdout: out.contents(),
            stderr: String(decoding: err.contents(), as: UTF8.self))
    }

    /// Starts a program with stdin from /dev/null and the given descriptors
    /// as stdout and stderr; returns its PID for the caller to wait for.
    /// Stops process `pid`: SIGTERM, then SIGKILL after `seconds`; reaped
    /// either way.
    static func terminate(_ pid: pid_t, within seconds: Double = 10) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(seconds)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let addCloseFrom: AddCloseFrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    ).map { unsafeBitCast($0, to: AddCloseFrom.self) }

    static func spawn(_ executable: String, _ arguments: [String], stdout: Int32, stderr: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Nothing else of the test process: suites run at once, and a file
        // another test has open in its mount at this moment, inherited by a
        // child that lives on (an origin, a daemon's parent), would keep
        // that mount busy when its test unmounts.
        // (glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which
        // Swift's Glibc module does not show.)
        _ = Self.addCloseFrom?(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = [executable] + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, executable, &actions, &attributes, &cArguments, environ)
        guard result == 0 else {
            throw HarnessError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// Whether a process is still running: some thread of it is neither
    /// gone nor a zombie. Its main thread alone shows as a zombie while
    /// the others still exit, holding the process's files (a killed
    /// daemon's /dev/fuse: a request it had taken then ends with EIO, not
    /// with the dead connection's ENOTCONN).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else {
            return isRunning(stat: "/proc/\(pid)/stat")
        }
        return threads.contains { isRunning(stat: "/proc/\(pid)/task/\($0)/stat") }
    }

    /// Whether the thread whose `stat` file is at `path` is neither gone
    /// nor a zombie.
    private static func isRunning(stat path: String) -> Bool {
        let status = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        guard let close = status.lastIndex(of: ")") else { return false }
        let state = status[status.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    /// Polls `condition` every 0.05 s for up to `seconds`; whether it held.
    /// An episode's cached bytes as its attribute `user.podfs.cached_bytes`
    /// tells.
    static func cachedBytes(_ path: String) -> Int64? {
        let cached = try? run("getfattr", ["--only-values", "-n", "user.podfs.cached_bytes", path])
        return cached.flatMap { Int64($0.text.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    static func eventually(_ seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return try condition()
    }

    /// Runs a shell command line; throws when it fails.
    @discardableResult
    static func sh(_ command: String, timeout: Double = 120) throws -> String {
        let output = try run("/bin/sh", ["-c", command], timeout: timeout)
        guard output.status == 0 else {
            throw HarnessError("`\(command)` failed (\(output.status)): \(output.stderr)")
        }
        return output.text
    }

    /// SHA-256 of a file, via sha256sum (a real program reading the mount).
    static func sha256(_ path: String) throws -> String {
        let output = try run("sha256sum", [path], timeout: 300)
        guard output.status == 0 else { throw HarnessError("sha256sum \(path): \(output.stderr)") }
        return String(output.text.prefix(64))
    }

    /// Deterministic pseudo-random bytes.
    static func bytes(count: Int, seed: UInt64) -> Data {
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        var data = Data(count: count)
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                words[i] = state ^ (state >> 29)
            }
            for i in (words.count * 8)..<count { raw[i] = UInt8(truncatingIfNeeded: i) }
        }
        return data
    }
}

extension Trait where Self == ConditionTrait {
    /// For suites that mount, trace or change the system: they skip, saying
    /// why, when the tests do not run as root or there is no /dev/fuse (and
    /// fail under `PODFS_CI=1`, `Requirement`).
    static var needsRoot: Self { .needs(Requirement.root) }
}

/// A test failure in the harness itself.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A process that keeps a file open, as a player holds its file, until
/// `stop()` or the end of the holder's scope: podfs sees an open file
/// throughout.
final class FileHolder {
    let pid: pid_t

    init(_ path: String, seconds: Int = 600) throws {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        pid = try Harness.spawn(
            "sh", ["-c", "exec 3<'\(path)'; exec sleep \(seconds)"], stdout: devNull, stderr: devNull)
    }

    deinit { stop() }

    /// Ends the process (the file closes) and reaps it.
    func stop() {
        guard kill(pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// A file for a child's output (a pipe could fill and block it).
final class TempFile {
    let path: String
    let handle: FileHandle

    init() throws {
        path = NSTemporaryDirectory() + "podfs-out-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { throw HarnessError("cannot create \(path)") }
        self.handle = handle
    }

    func contents() -> Data {
        FileManager.default.contents(atPath: path) ?? Data()
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }
}
