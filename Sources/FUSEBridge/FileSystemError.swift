import Glibc

/// A failure a file system reports to the kernel. The mapping to an errno
/// happens here and nowhere else.
public enum FileSystemError: Error, Sendable, Equatable {
    case notFound
    case notDirectory
    case isDirectory
    case readOnly
    case permissionDenied
    case noAttribute
    case bufferTooSmall
    case ioError
    case notSupported
    case interrupted
    /// Not this caller's to change (`EPERM`).
    case notPermitted
    /// A value that means nothing here (`EINVAL`).
    case invalidArgument
    /// No room for it (`ENOSPC`).
    case noSpace

    /// The errno the kernel hands to the caller.
    public var errno: Int32 {
        switch self {
        case .notFound: return ENOENT
        case .notDirectory: return ENOTDIR
        case .isDirectory: return EISDIR
        case .readOnly: return EROFS
        case .permissionDenied: return EACCES
        case .noAttribute: return ENODATA
        case .bufferTooSmall: return ERANGE
        case .ioError: return EIO
        case .notSupported: return ENOTSUP
        case .interrupted: return EINTR
        case .notPermitted: return EPERM
        case .invalidArgument: return EINVAL
        case .noSpace: return ENOSPC
        }
    }
}
