#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// A failed system call on a cache file, with what was attempted, on which
/// path, and the `errno` it returned.
///
/// Its `description` is a sentence a person can act on, naming the file, the
/// system's explanation and, for the common causes (a full disk, missing
/// permissions, a read-only file system), what to do about it.
public struct FileError: Error, Sendable {
    // MARK: - Public properties

    /// The system call that failed: `"open"`, `"pread"`, `"pwrite"`,
    /// `"fdatasync"`, `"ftruncate"`, `"fallocate"`, `"fstat"`, `"mkdir"`.
    public let operation: String

    /// The path of the file or directory the call was about.
    public let path: String

    /// The `errno` value the call reported.
    public let errno: Int32

    /// Whether the file system is out of space or over quota, the one failure
    /// that evicting cached episodes can cure.
    public var isNoSpace: Bool {
        errno == ENOSPC || errno == EDQUOT
    }

    // MARK: - Init

    /// Creates an error for `operation` on `path` that failed with `errno`.
    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    // MARK: - Private methods

    /// What the operation was trying to do, as a verb phrase.
    private var attempted: String {
        switch operation {
        case "open": "open the cache file"
        case "pread", "read": "read the cache file"
        case "pwrite", "write": "write the cache file"
        case "fdatasync", "fsync": "flush to disk the cache file"
        case "ftruncate": "resize the cache file"
        case "fallocate": "free space in the cache file"
        case "fstat": "inspect the cache file"
        case "mkdir": "create the cache directory"
        case "unlink": "delete the cache file"
        case "link": "give the cache file its new name"
        case "lseek": "look for holes in the cache file"
        default: "\(operation) the cache file"
        }
    }

    /// A hint for the causes a person can fix, or `nil`.
    private var remedy: String? {
        switch errno {
        case ENOSPC, EDQUOT:
            "Free space or lower --cache-size."
        case EACCES, EPERM:
            "Check the permissions of the cache directory or choose another with --cache-dir."
        case EROFS:
            "The file system is read-only; choose another cache directory with --cache-dir."
        case EMFILE, ENFILE:
            "Too many files are open; raise the limit (ulimit -n) or read fewer episodes at once."
        case EOPNOTSUPP:
            "The file system of the cache directory does not support this; choose another with --cache-dir."
        case EFBIG:
            "The file is larger than this process or file system allows (ulimit -f); raise the limit or use another --cache-dir."
        case EIO:
            "The disk reported an I/O error; check it (dmesg) or move the cache with --cache-dir."
        default:
            nil
        }
    }

    /// The symbolic name of `errno`, for the common values.
    private var errnoName: String {
        switch errno {
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case EROFS: "EROFS"
        case ENOENT: "ENOENT"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EEXIST: "EEXIST"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case EIO: "EIO"
        case EBADF: "EBADF"
        case EINVAL: "EINVAL"
        case EFBIG: "EFBIG"
        case ENOMEM: "ENOMEM"
        default: "errno \(errno)"
        }
    }
}

// MARK: - CustomStringConvertible

extension FileError: CustomStringConvertible {
    /// For example: "could not write the cache file /x/data/abc: No space left
    /// on device (ENOSPC). Free space or lower --cache-size."
    public var description: String {
        let reason = String(cString: strerror(errno))
        let sentence = "could not \(attempted) \(path): \(reason) (\(errnoName))."
        guard let remedy else { return sentence }
        return sentence + " " + remedy
    }
}
