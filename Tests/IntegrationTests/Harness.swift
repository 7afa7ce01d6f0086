import Foundation
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
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], timeout: Double = 120) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        let out = try TempFile()
        let err = try TempFile()
        process.standardOutput = out.handle
        process.standardError = err.handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw HarnessError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return Output(
            status: process.terminationStatus, stdout: out.contents(),
            stderr: String(decoding: err.contents(), as: UTF8.self))
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

/// A test failure in the harness itself.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A file for a child's output (a pipe could fill and block it).
final class TempFile {
    let path: String
    let handle: FileHandle

    init() throws {
        path = NSTemporaryDirectory() + "podfs-out-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: path, contents: nil)
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
