import ArgumentParser
import Foundation

/// Runs the mount in a background process and returns once it is usable.
///
/// The child is this executable with `--daemon-child`; it reports on its
/// standard output, a pipe: `ready`, or `error: <message>`. Its standard
/// error (the log) goes to the log file.
enum Daemon {
    static func start(arguments: [String], cacheDirectory: String, logFile: String, mountpoint: String) throws {
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        let logDirectory = (logFile as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: logFile) {
            FileManager.default.createFile(atPath: logFile, contents: nil)
        }
        guard let log = FileHandle(forWritingAtPath: logFile) else {
            throw ValidationError("cannot write the log file \(logFile); pass --log-file PATH")
        }
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var childArguments = Array(arguments.dropFirst())
        if childArguments.first != "mount" { childArguments.insert("mount", at: 0) }
        // The child must find the same mount point whatever its directory.
        childArguments[childArguments.count - 1] = mountpoint
        childArguments.insert("--daemon-child", at: 1)
        childArguments.insert(contentsOf: ["--cache-dir", cacheDirectory], at: 1)
        process.arguments = childArguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = log
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        pipe.fileHandleForWriting.closeFile()
        // Warnings (a SOURCE left out) come before `ready` or `error:`:
        // pass them on and keep reading.
        var buffer = Data()
        var line = ""
        reading: while true {
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                line = String(decoding: buffer[..<newline], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                buffer.removeSubrange(...newline)
                guard line.hasPrefix("warning: ") else { break reading }
                FileHandle.standardError.write(Data("podfs: \(line)\n".utf8))
                line = ""
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty {
                line = String(decoding: buffer, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                break
            }
            buffer.append(chunk)
        }
        if line == "ready" {
            print("podfs: mounted on \(mountpoint) (pid \(process.processIdentifier), log \(logFile))")
            return
        }
        process.waitUntilExit()
        let message = line.hasPrefix("error: ") ? String(line.dropFirst(7)) : "the daemon exited (status \(process.terminationStatus)); see \(logFile)"
        FileHandle.standardError.write(Data("podfs: \(message)\n".utf8))
        throw ExitCode(1)
    }
}
