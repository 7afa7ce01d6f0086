import Foundation
import Logging

/// A swift-log handler that writes to syslog(3), which journald collects on
/// systemd machines (`journalctl -t podfs`).
///
/// Metadata is appended as `key=value` pairs; a level maps to the syslog
/// priority of the same meaning (trace and debug both to `LOG_DEBUG`).
struct SyslogLogHandler: LogHandler {
    // MARK: - Properties

    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private let label: String

    // MARK: - Init

    /// Opens the log once per process with the ident `podfs` and the pid.
    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
        Self.openOnce
    }

    /// `openlog` keeps the ident pointer: a static string lives forever.
    private static let openOnce: Void = {
        let ident: StaticString = "podfs"
        openlog(UnsafeRawPointer(ident.utf8Start).assumingMemoryBound(to: CChar.self), LOG_PID | LOG_NDELAY, LOG_DAEMON)
    }()

    // MARK: - LogHandler

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var text = "\(event.level): \(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            text += " \(key)=\(value)"
        }
        // Through "%s": the message is data, never a format string.
        text.withCString { pointer in
            withVaList([pointer]) { vsyslog(Self.priority(event.level), "%s", $0) }
        }
    }

    // MARK: - Private methods

    private static func priority(_ level: Logger.Level) -> Int32 {
        switch level {
        case .trace, .debug: return LOG_DEBUG
        case .info: return LOG_INFO
        case .notice: return LOG_NOTICE
        case .warning: return LOG_WARNING
        case .error: return LOG_ERR
        case .critical: return LOG_CRIT
        }
    }
}
