import Foundation

/// What the commands print, on standard output or error. A stream whose
/// reader is gone (`podfs subscriptions | head -1`, a `podfs mount` stopped
/// by Ctrl-C while its daemon starts) loses the text: `FileHandle.write`
/// would stop the process on `EPIPE`, and the daemon with it, its mount
/// left dead.
enum Console {
    /// Writes `text` to standard output; `false` if it could not go out.
    @discardableResult
    static func out(_ text: String) -> Bool { write(Array(text.utf8), to: STDOUT_FILENO) }

    /// Writes `text` to standard error; `false` if it could not go out.
    @discardableResult
    static func error(_ text: String) -> Bool { write(Array(text.utf8), to: STDERR_FILENO) }

    /// Writes `bytes` to standard output; `false` if they could not go out.
    @discardableResult
    static func out(_ bytes: Data) -> Bool { write(Array(bytes), to: STDOUT_FILENO) }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                done += written
            }
            return true
        }
    }
}
