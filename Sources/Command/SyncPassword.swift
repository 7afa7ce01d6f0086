import Glibc
import PodFS

/// Reads the sync password from `sync_password_file=FILE`.
///
/// The file must be a regular file owned by the user podfs runs as (or by
/// root) that neither its group nor others may read or write, as ssh holds
/// its keys: a password others can read is no secret, and podfs says so
/// rather than send it. The password is the first line, without its line
/// end. No message ever holds it.
enum SyncPassword {
    /// The most bytes read: a password file is one short line.
    static let maxBytes = 4_096

    /// The password in `path`, or a `.setup` error saying what to change.
    static func read(path: String) throws(SyncError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw SyncError(.setup, "cannot open sync_password_file \(path): \(reason)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw SyncError(.setup, "cannot read sync_password_file \(path): \(String(cString: strerror(errno)))")
        }
        try check(mode: info.st_mode, owner: info.st_uid, path: path)
        var bytes = [UInt8](repeating: 0, count: maxBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else {
                throw SyncError(.setup, "cannot read sync_password_file \(path): \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            count += got
        }
        guard count <= maxBytes else {
            throw SyncError(.setup, "sync_password_file \(path) is larger than \(maxBytes) bytes: it should hold the password alone")
        }
        return try password(in: Array(bytes[..<count]), path: path)
    }

    /// Refuses a file that is no regular file, not the user's, or open to
    /// the group or others.
    static func check(mode: mode_t, owner: uid_t, path: String) throws(SyncError) {
        guard mode & S_IFMT == S_IFREG else {
            throw SyncError(.setup, "sync_password_file \(path) is not a regular file")
        }
        guard owner == geteuid() || owner == 0 else {
            throw SyncError(.setup, "sync_password_file \(path) belongs to another user (uid \(owner)): podfs reads only your own")
        }
        guard mode & 0o077 == 0 else {
            let shown = String(mode & 0o777, radix: 8)
            throw SyncError(
                .setup,
                "sync_password_file \(path) may be read by others (mode \(shown)); podfs does not send a password "
                    + "others can read: run chmod 600 \(path)")
        }
    }

    /// The first line of `bytes`, without `\n` or `\r\n`.
    static func password(in bytes: [UInt8], path: String) throws(SyncError) -> String {
        var line = bytes.prefix { $0 != 0x0A }
        if line.last == 0x0D { line = line.dropLast() }
        guard !line.isEmpty, !line.contains(0) else {
            throw SyncError(.setup, "sync_password_file \(path) holds no password on its first line")
        }
        guard let text = String(validating: line, as: UTF8.self) else {
            throw SyncError(.setup, "sync_password_file \(path) is not UTF-8 text")
        }
        return text
    }
}
