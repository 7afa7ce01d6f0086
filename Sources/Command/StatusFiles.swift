import Foundation
import Logging
import PodFS
import RangeCache

/// The contents of a mount's `.podfs/status` and `.podfs/status.json`:
/// what `podfs status` shows for the mount's cache, with a line about the
/// mount itself first.
enum StatusFiles {
    /// The control files for a mount of `cacheDirectory` on `mountpoint`.
    static func make(cacheDirectory: String, mountpoint: String, logger: Logger) -> ControlFiles {
        let started = Date()
        let pid = getpid()
        let header = { @Sendable () -> String in
            let formatter = ISO8601DateFormatter()
            return "podfs on \(mountpoint) (pid \(pid), mounted \(formatter.string(from: started)))\n"
        }
        let status = ControlFiles.File(name: "status") {
            switch report(cacheDirectory: cacheDirectory, logger: logger) {
            case .success(let report): return Array((header() + report.text()).utf8)
            case .failure(let error): return Array((header() + "cannot read the cache index: \(error)\n").utf8)
            }
        }
        let json = ControlFiles.File(name: "status.json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            switch report(cacheDirectory: cacheDirectory, logger: logger) {
            case .success(let report): return Array(((try? report.json(encoder)) ?? "").utf8) + Array("\n".utf8)
            case .failure(let error):
                // Encoded, not interpolated: the message may hold quotes.
                let body = (try? encoder.encode(["error": "cannot read the cache index: \(error)"])) ?? Data("{}".utf8)
                return Array(TerminalText.escapingJSON(String(decoding: body, as: UTF8.self)).utf8) + Array("\n".utf8)
            }
        }
        return ControlFiles(files: [status, json])
    }

    /// A fresh read-only snapshot of the index.
    private static func report(cacheDirectory: String, logger: Logger) -> Result<CacheReport, Error> {
        var quiet = logger
        quiet.logLevel = .error
        do {
            let snapshot = try CacheIndex(readingDirectory: cacheDirectory, logger: quiet).snapshot()
            return .success(CacheReport(directory: cacheDirectory, snapshot: snapshot, logger: quiet))
        } catch {
            return .failure(error)
        }
    }
}
