import ArgumentParser
import Foundation
import Logging

/// The `-o` spellings of the mount command's daemon and tuning options, so
/// an fstab line or a systemd unit can say everything the command line can.
///
/// A command-line flag wins over its `-o` twin when both are given.
struct DaemonOptions {
    // MARK: - Properties

    /// The option names, for error messages and `--help`.
    static let summary =
        "log_file=PATH|syslog, log_level=LEVEL, syslog, debug, commit_interval=SECONDS, "
        + "revalidate_after=SECONDS, readahead_kb=KIB, nonempty"

    /// `-o log_file=PATH` (`syslog` means `-o syslog`).
    var logFile: String?
    /// `-o log_level=LEVEL`.
    var logLevel: Logger.Level?
    /// `-o syslog`: the background daemon logs to syslog (journald).
    var syslog = false
    /// `-o debug`: debug logging, still in the background (unlike `-d`).
    var debug = false
    /// `-o commit_interval=SECONDS`.
    var commitInterval: Double?
    /// `-o revalidate_after=SECONDS`.
    var revalidateAfter: Double?
    /// `-o nonempty`: mount over a directory that holds files.
    var nonempty = false
    /// `-o readahead_kb=KIB`: the kernel's read-ahead for the mount.
    var readAheadKiB: Int?

    // MARK: - Methods

    /// Takes one option if it is one of these; `false` if it is not.
    mutating func parse(name: String, value: String?) throws -> Bool {
        switch name {
        case "log_file":
            guard let value, !value.isEmpty else {
                throw ValidationError("-o log_file needs a path, e.g. -o log_file=/var/log/podfs.log, or -o syslog")
            }
            if value == "syslog" { syslog = true } else { logFile = value }
        case "log_level":
            guard let value, let level = Self.level(value) else {
                throw ValidationError("-o log_level needs one of \(Self.levelNames), e.g. -o log_level=debug")
            }
            logLevel = level
        case "syslog":
            syslog = true
        case "debug":
            debug = true
        case "commit_interval":
            guard let value, let seconds = Double(value), seconds >= 0, seconds <= 3600 else {
                throw ValidationError("-o commit_interval needs seconds between 0 and 3600, e.g. -o commit_interval=5")
            }
            commitInterval = seconds
        case "revalidate_after":
            guard let value, let seconds = Double(value), seconds >= 0 else {
                throw ValidationError("-o revalidate_after needs 0 or more seconds, e.g. -o revalidate_after=3600")
            }
            revalidateAfter = seconds
        case "readahead_kb":
            guard let value, let kib = Int(value), (4...65_536).contains(kib) else {
                throw ValidationError("-o readahead_kb needs KiB between 4 and 65536, e.g. -o readahead_kb=768")
            }
            readAheadKiB = kib
        case "nonempty":
            nonempty = true
        default:
            return false
        }
        return true
    }

    /// The level names `--log-level` and `-o log_level=` take.
    static let levelNames = "trace, debug, info, notice, warning, error"

    /// A level from its name (`warn` is taken for `warning`).
    static func level(_ name: String) -> Logger.Level? {
        let lowered = name.lowercased()
        if lowered == "warn" { return .warning }
        guard let level = Logger.Level(rawValue: lowered), level != .critical else { return nil }
        return level
    }
}
