#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import CLinuxFile

/// One episode's sparse data file: the only place podfs calls libc to read,
/// write, flush or shrink episode bytes.
///
/// Every call retries `EINTR`, loops over short reads and writes, and turns a
/// failure into a `FileError` naming the file. The file descriptor is opened
/// once in `init`, never changes and is closed in `deinit`; `pread` and
/// `pwrite` carry their own offsets, so one `ScratchFile` may be used from
/// any number of threads at once. Callers order their own writes and reads of
/// the same bytes (docs/DESIGN.md, "The read path" and guarantee 1).
public final class ScratchFile: Sendable {
    // MARK: - Public properties

    /// The path the file was opened at.
    public let path: String

    /// The open file descriptor, valid for the lifetime of this object.
    public var fileDescriptor: Int32 { descriptor }

    // MARK: - Private properties

    /// Opened in `init` and closed in `deinit`; never reassigned.
    private let descriptor: Int32

    // MARK: - Init and deinit

    /// Opens or creates the file at `path` (mode 0600) and, when its size is
    /// not `length`, truncates or extends it to `length` without allocating
    /// blocks, so unwritten bytes read as zeros and take no space.
    ///
    /// A file without its length yet (one just made, here or by another
    /// thread) has its directory flushed first (`fsync`), so its name
    /// outlives a power cut before any range of it can be committed: a file
    /// found at its length was made durable by whoever gave it that length.
    public init(path: String, length: Int64) throws(FileError) {
        self.path = path
        let descriptor = try Self.retrying("open", path) {
            open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        }
        self.descriptor = descriptor
        // Exactly 0600 whatever the umask took away (`CachePrivacy`).
        _ = fchmod(descriptor, CachePrivacy.fileMode)
        // From here on deinit closes the descriptor if we throw.
        if try currentLength() != length {
            let slash = path.lastIndex(of: "/")
            try Self.synchronizeDirectory(slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? ".")
            try resize(to: length)
        }
    }

    /// Opens the existing file at `path` for reading only, leaving its size
    /// alone (for checking a cache that is not in use). Throws a `FileError`
    /// with `ENOENT` when there is no such file.
    public init(existingAt path: String) throws(FileError) {
        self.path = path
        descriptor = try Self.retrying("open", path) { open(path, O_RDONLY | O_CLOEXEC) }
    }

    deinit {
        // close(2) must not be retried on EINTR on Linux: the descriptor is
        // already released.
        _ = close(descriptor)
    }

    // MARK: - Reading

    /// Reads into `buffer` from `offset` until the buffer is full or the file
    /// ends, and returns the number of bytes read.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileError)
        -> Int
    {
        var done = 0
        while done < buffer.count {
            let got = try Self.retrying("pread", path) {
                pread(
                    descriptor, buffer.baseAddress! + done, buffer.count - done,
                    off_t(offset) + off_t(done))
            }
            if got == 0 { break }
            done += got
        }
        return done
    }

    /// Reads up to `count` bytes from `offset`; fewer only when the file ends.
    public func read(count: Int, at offset: Int64) throws(FileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var failure: FileError?
        let got = bytes.withUnsafeMutableBytes { buffer -> Int in
            do throws(FileError) {
                return try read(into: buffer, at: offset)
            } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        bytes.removeSubrange(got..<bytes.endIndex)
        return bytes
    }

    // MARK: - Writing

    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let wrote = try Self.retrying("pwrite", path) {
                pwrite(
                    descriptor, bytes.baseAddress! + done, bytes.count - done,
                    off_t(offset) + off_t(done))
            }
            // pwrite returns 0 for a non-empty buffer only on a broken file
            // system; report it rather than spin.
            if wrote == 0 { throw FileError(operation: "pwrite", path: path, errno: EIO) }
            done += wrote
        }
    }

    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: [UInt8], at offset: Int64) throws(FileError) {
        var failure: FileError?
        bytes.withUnsafeBytes { buffer in
            do throws(FileError) {
                try write(buffer, at: offset)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Flushes written bytes to stable storage (`fdatasync`). Ranges may be
    /// committed to the index only after this returns.
    public func synchronize() throws(FileError) {
        _ = try Self.retrying("fdatasync", path) {
            #if os(Linux)
            fdatasync(descriptor)
            #else
            fsync(descriptor)
            #endif
        }
    }

    /// Frees the blocks of `range` without changing the file's size; the
    /// range then reads as zeros.
    public func punchHole(_ range: Range<Int64>) throws(FileError) {
        guard !range.isEmpty else { return }
        #if os(Linux)
        _ = try Self.retrying("fallocate", path) {
            podfs_punch_hole(
                descriptor, off_t(range.lowerBound), off_t(range.upperBound - range.lowerBound))
        }
        #else
        throw FileError(operation: "fallocate", path: path, errno: EOPNOTSUPP)
        #endif
    }

    /// Reserves disk blocks for `range` (`posix_fallocate`), so later
    /// writes there cannot fail for lack of space.
    public func allocate(_ range: Range<Int64>) throws(FileError) {
        guard !range.isEmpty else { return }
        while true {
            let result = posix_fallocate(descriptor, off_t(range.lowerBound), off_t(range.count))
            if result == 0 { return }
            if result == EINTR { continue }
            throw FileError(operation: "fallocate", path: path, errno: result)
        }
    }

    /// Truncates or sparsely extends the file to `length` bytes.
    public func resize(to length: Int64) throws(FileError) {
        _ = try Self.retrying("ftruncate", path) { ftruncate(descriptor, off_t(length)) }
    }

    /// The parts of `range` that are holes in the file (never written, or
    /// punched): bytes there read as zeros whatever anyone wrote. A file
    /// system that cannot tell reports none. Parts past the end of the file
    /// count as holes.
    public func holes(in range: Range<Int64>) throws(FileError) -> [Range<Int64>] {
        #if os(Linux)
        var result: [Range<Int64>] = []
        var position = range.lowerBound
        while position < range.upperBound {
            let hole = try seek(position, data: false)
            guard let hole, hole < range.upperBound else { break }
            let data = try seek(hole, data: true) ?? range.upperBound
            let end = min(max(data, hole + 1), range.upperBound)
            result.append(hole..<end)
            position = end
        }
        return result
        #else
        return []
        #endif
    }

    /// Whether a file is at `path` (a scratch file deleted by hand is not).
    public static func exists(path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Deletes the file at `path`; a file that is already gone is fine.
    public static func remove(path: String) throws(FileError) {
        if unlink(path) == 0 || Glibc.errno == ENOENT { return }
        throw FileError(operation: "unlink", path: path, errno: Glibc.errno)
    }

    /// Gives the file at `path` a second name, `newPath` (a hard link in the
    /// same directory), so it is under both until one is removed.
    static func link(_ path: String, to newPath: String) throws(FileError) {
        _ = try retrying("link", newPath) { Glibc.link(path, newPath) }
    }

    /// Flushes a directory's entries to disk, so a name made in it outlives a
    /// power cut.
    static func synchronizeDirectory(_ path: String) throws(FileError) {
        let descriptor = try retrying("open", path) { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { _ = close(descriptor) }
        _ = try retrying("fsync", path) { fsync(descriptor) }
    }

    /// The file's current size in bytes.
    public func currentLength() throws(FileError) -> Int64 {
        var status = stat()
        _ = try Self.retrying("fstat", path) { fstat(descriptor, &status) }
        return Int64(status.st_size)
    }

    // MARK: - Private methods

    #if os(Linux)
    /// The next data (or hole) offset at or after `offset`; `nil` when there
    /// is none before the end of the file (ENXIO).
    private func seek(_ offset: Int64, data: Bool) throws(FileError) -> Int64? {
        let result = data ? podfs_seek_data(descriptor, off_t(offset)) : podfs_seek_hole(descriptor, off_t(offset))
        if result >= 0 { return Int64(result) }
        let code = Glibc.errno
        if code == ENXIO { return data ? nil : offset }
        if code == EINVAL || code == EOPNOTSUPP { return nil }
        throw FileError(operation: "lseek", path: path, errno: code)
    }
    #endif

    /// Runs `call` until it does not fail with `EINTR`; a negative result
    /// becomes a `FileError` carrying `errno`.
    private static func retrying<Result: BinaryInteger>(
        _ operation: String, _ path: String, _ call: () -> Result
    ) throws(FileError) -> Result {
        while true {
            let result = call()
            if result >= 0 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw FileError(operation: operation, path: path, errno: code)
        }
    }
}
