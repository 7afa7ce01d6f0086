#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// The cache directory is private to its owner: it and every directory in
/// it are 0700, every file in it is 0600, whatever the umask.
///
/// The index names the feeds someone subscribes to (with their tokens) and
/// what they listen to. Files are created with explicit modes and fixed with
/// `fchmod` (never by changing the process-wide umask, which other threads
/// share); a directory made under older rules is tightened when a process
/// opens the cache to write (`CacheIndex.init(directory:logger:)`).
public enum CachePrivacy {
    // MARK: - Properties

    /// The mode of the cache directory and each directory in it.
    static let directoryMode: mode_t = 0o700

    /// The mode of each file in the cache directory.
    static let fileMode: mode_t = 0o600

    // MARK: - Public methods

    /// `mkdir -p` with `directoryMode`; a directory made here gets exactly
    /// that mode. Returns `errno` of the failure, 0 on success.
    public static func makeDirectory(_ path: String) -> Int32 {
        if mkdir(path, directoryMode) == 0 {
            // The umask may have taken owner bits away.
            _ = chmod(path, directoryMode)
            return 0
        }
        if errno == EEXIST { return 0 }
        guard errno == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return errno }
        let parent = makeDirectory(String(path[..<slash]))
        guard parent == 0 else { return parent }
        return makeDirectory(path)
    }

    /// Creates `path` empty with `fileMode` if it does not exist (so that
    /// SQLite, which gives its `-wal` and `-shm` files the mode of the
    /// database file, creates those private too). Returns `errno` of the
    /// failure, 0 on success or when the file was there.
    public static func createFile(_ path: String) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        guard descriptor >= 0 else { return errno == EEXIST ? 0 : errno }
        _ = fchmod(descriptor, fileMode)
        close(descriptor)
        return 0
    }

    /// Replaces the file at `path` with `bytes` at once: written beside it
    /// (`path.tmp`, private) and renamed over it, so a reader or a crash
    /// sees the old file or the new one, never half of one. Returns what
    /// went wrong, naming the file, or `nil`.
    public static func replaceFile(_ path: String, _ bytes: [UInt8]) -> String? {
        let aside = path + ".tmp"
        let written = writeFile(aside, bytes)
        guard written == 0 else { return "could not write \(aside): \(String(cString: strerror(written)))" }
        guard rename(aside, path) == 0 else { return "could not replace \(path): \(String(cString: strerror(errno)))" }
        return nil
    }

    /// Writes `bytes` to `path` (created or truncated) with `fileMode`.
    /// Returns `errno` of the failure, 0 on success.
    public static func writeFile(_ path: String, _ bytes: [UInt8]) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, fileMode)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        // An existing file keeps its mode through O_CREAT: set it.
        guard fchmod(descriptor, fileMode) == 0 else { return errno }
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += result
        }
        return 0
    }

    /// Gives `directory`, and every directory and file below it, the modes
    /// described on the type; returns how many entries changed. Symbolic
    /// links inside are neither followed nor changed (`directory` itself may
    /// be one, to a cache on another disk); an entry that cannot be changed
    /// (another owner) is left as it is.
    public static func tighten(_ directory: String) -> Int {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        var info = stat()
        var changed = 0
        if fstat(descriptor, &info) == 0, info.st_mode & 0o7777 != directoryMode, fchmod(descriptor, directoryMode) == 0 {
            changed += 1
        }
        return changed + tightenEntries(of: descriptor)
    }

    // MARK: - Private methods

    /// Tightens the entries of the open directory `descriptor` (which
    /// this closes) and, depth first, those of its subdirectories.
    private static func tightenEntries(of descriptor: Int32) -> Int {
        guard let stream = fdopendir(descriptor) else {
            close(descriptor)
            return 0
        }
        defer { closedir(stream) }
        var changed = 0
        while let entry = readdir(stream) {
            changed += withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { name in
                    tightenEntry(name, in: descriptor)
                }
            }
        }
        return changed
    }

    private static func tightenEntry(_ name: UnsafePointer<CChar>, in parent: Int32) -> Int {
        if strcmp(name, ".") == 0 || strcmp(name, "..") == 0 { return 0 }
        var info = stat()
        guard fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return 0 }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFLNK { return 0 }
        let wanted = kind == S_IFDIR ? directoryMode : fileMode
        var changed = 0
        if info.st_mode & 0o7777 != wanted, fchmodat(parent, name, wanted, 0) == 0 { changed += 1 }
        guard kind == S_IFDIR else { return changed }
        let child = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard child >= 0 else { return changed }
        return changed + tightenEntries(of: child)
    }
}
