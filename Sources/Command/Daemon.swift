import ArgumentParser
import Foundation
import RangeCache

/// Runs the mount in a background process and returns once it is usable.
///
/// The child is this executable with `--daemon-child`; it reports on its
/// standard output, a pipe: `ready`, or `error: <message>`. Its standard
/// error (the log) goes to the log file.
enum Daemon {
    /// A line break inside one report on the pipe (the record separator,
    /// which no message holds: text from feeds is cleaned of control
    /// characters).
    static let lineBreak = "\u{1E}"
    /// A report that is neither a warning nor the verdict: shown as it is
    /// (`podfs: ...`), the mount goes on.
    static let note = "note: "

    /// What the user sees of a report that is no verdict (`warning: ...`
    /// as it is, `note: ...` without its tag); `nil` for any other line.
    static func shown(_ line: String) -> String? {
        if line.hasPrefix("warning: ") { return "podfs: \(line)\n" }
        if line.hasPrefix(note) { return "podfs: \(line.dropFirst(note.count))\n" }
        return nil
    }

    /// - Parameter logFile: where the child's standard error goes; `nil`:
    ///   it logs to syslog, and its standard error is discarded.
    /// - Parameter typedMountpoint: the mount point as given, replaced in
    ///   the child's arguments by the absolute `mountpoint`.
    static func start(
        arguments: [String], cacheDirectory: String, logFile: String?, mountpoint: String, typedMountpoint: String
    ) throws {
        let made = CachePrivacy.makeDirectory(cacheDirectory)
        if made != 0 {
            let reason = String(cString: strerror(made))
            Console.error(
                "podfs: cannot create the cache directory \(cacheDirectory): \(reason); "
                    + "give one you can write with --cache-dir DIR or -o cache_dir=DIR\n")
            throw ExitCode(1)
        }
        let log: FileHandle
        if let logFile {
            let logDirectory = (logFile as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
            // O_APPEND: a daemon still saving and the next one share the
            // file; each line lands at the end, none overwrites another.
            // 0600: by default the log lives in the cache, which is private.
            let descriptor = open(logFile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                // The default log lives in the cache: a cache that cannot be
                // written is what to mend, not the log's path.
                let remedy = logFile.hasPrefix(cacheDirectory + "/")
                    ? "the cache directory must be writable (or give another with --cache-dir DIR)"
                    : "pass --log-file PATH"
                Console.error("podfs: cannot write the log file \(logFile): \(reason); \(remedy)\n")
                throw ExitCode(1)
            }
            log = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        } else {
            log = FileHandle(forWritingAtPath: "/dev/null")!
        }
        let logName = logFile ?? "syslog (journalctl -t podfs)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var childArguments = Array(arguments.dropFirst())
        if childArguments.first != "mount" { childArguments.insert("mount", at: 0) }
        // The child must find the same mount point whatever its directory.
        // It is the last positional argument, which is not the last
        // argument in mount.fuse3's form (`podfs SOURCE MOUNTPOINT -o OPTS`).
        if let position = childArguments.lastIndex(of: typedMountpoint) {
            childArguments[position] = mountpoint
        }
        childArguments.insert("--daemon-child", at: 1)
        childArguments.insert(contentsOf: ["--cache-dir", cacheDirectory], at: 1)
        process.arguments = childArguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = log
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        pipe.fileHandleForWriting.closeFile()
        // The child may send `warning: ...` lines (feeds left out) and
        // `note: ...` lines before `ready` or `error: ...`; pass them on
        // and wait for the verdict.
        var buffer = Data()
        var verdict = ""
        reading: while true {
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                    .replacingOccurrences(of: lineBreak, with: "\n")
                buffer = Data(buffer[(newline + 1)...])
                if let shown = shown(line) {
                    Console.error(shown)
                    continue
                }
                verdict = line
                break reading
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
        }
        let line = verdict
        if line == "ready" {
            print("podfs: mounted on \(mountpoint) (pid \(process.processIdentifier), log \(logName))")
            return
        }
        process.waitUntilExit()
        let message = line.hasPrefix("error: ") ? String(line.dropFirst(7)) : "the daemon exited (status \(process.terminationStatus)); see \(logName)"
        Console.error("podfs: \(message)\n")
        throw ExitCode(1)
    }
}
