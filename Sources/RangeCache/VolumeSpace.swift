#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// The space of the file system that holds a folder (`statvfs`), as this
/// process may use it.
public struct VolumeSpace: Sendable, Equatable {
    // MARK: - Properties

    /// Bytes this process may still write (`f_bavail`, not `f_bfree`: the
    /// blocks kept for root are not ours to plan with).
    public let free: Int64
    /// The file system's size in bytes.
    public let total: Int64

    // MARK: - Initializers

    /// Measures the file system holding `directory`; `nil` when it cannot
    /// be measured (the folder is gone, or the file system does not say).
    public init?(of directory: String) {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return nil }
        free = Self.bytes(blocks: UInt64(stats.f_bavail), size: UInt64(stats.f_frsize))
        total = Self.bytes(blocks: UInt64(stats.f_blocks), size: UInt64(stats.f_frsize))
    }

    // MARK: - Private methods

    /// `blocks` × `size`, saturating at `Int64.max`.
    private static func bytes(blocks: UInt64, size: UInt64) -> Int64 {
        let (product, overflow) = blocks.multipliedReportingOverflow(by: size)
        return overflow ? .max : Int64(clamping: product)
    }
}
