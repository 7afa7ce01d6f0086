public import FUSEBridge
import Foundation
import Locking

/// The hidden `.podfs` directory in a mount's root and its read-only files
/// (`status`, `status.json`), whose contents are generated when opened.
///
/// Each open takes a fresh snapshot and keeps it for that open file, so a
/// reader sees one consistent text however it reads; the files are served
/// with `direct_io`, so the kernel reads to the real end whatever size a
/// `stat` saw. The directory is not listed in the root (a reader of the
/// tree never stumbles on it) but any path under it can be opened by name.
public final class ControlFiles: Sendable {
    // MARK: - Nested types

    /// One generated file.
    public struct File: Sendable {
        public let name: String
        public let generate: @Sendable () -> [UInt8]

        public init(name: String, generate: @escaping @Sendable () -> [UInt8]) {
            self.name = name
            self.generate = generate
        }
    }

    /// A recent generation, for `stat` (guarded by `state`'s lock).
    private struct Snapshot {
        var bytes: [UInt8]
        var takenAt: Double
    }

    /// Guarded by `state`'s lock.
    private struct State {
        /// Open file handle -> the bytes that open sees.
        var open: [UInt64: [UInt8]] = [:]
        var nextHandle: UInt64 = 1
        /// Inode -> the last generation, reused by `stat` for a second.
        var recent: [UInt64: Snapshot] = [:]
    }

    // MARK: - Properties

    /// The directory's name in the mount root.
    public static let directoryName = ".podfs"
    /// Inode numbers of the fixed kind (`Catalog.InodeKind`: the two lowest
    /// bits 0), which no show, episode or playlist has: 4, then its files
    /// 8, 12, ...
    public static let directoryInode: UInt64 = 4

    private let files: [File]
    private let modificationTime: Int64
    private let state = Locked(State())

    // MARK: - Init

    public init(files: [File]) {
        self.files = files
        modificationTime = Int64(Date().timeIntervalSince1970)
    }

    // MARK: - Methods

    /// Whether `inode` is one of these nodes.
    public func owns(_ inode: UInt64) -> Bool {
        inode == Self.directoryInode || fileIndex(inode) != nil
    }

    /// The attributes of `name` in `parent`, when it is one of these nodes.
    public func lookup(parent: UInt64, name: String) -> Attributes? {
        if parent == Catalog.rootInode, name == Self.directoryName { return attributes(Self.directoryInode) }
        guard parent == Self.directoryInode, let position = files.firstIndex(where: { $0.name == name }) else {
            return nil
        }
        return attributes(Self.fileInode(position))
    }

    /// The attributes of one of these nodes.
    public func attributes(_ inode: UInt64) -> Attributes? {
        if inode == Self.directoryInode {
            return Attributes(
                inode: inode, kind: .directory, permissions: 0o555, size: 0,
                modificationTime: modificationTime, linkCount: 2)
        }
        guard let position = fileIndex(inode) else { return nil }
        let now = monotonicSeconds()
        let cached = state.withLock { state in
            state.recent[inode].flatMap { now - $0.takenAt < 1 ? $0.bytes : nil }
        }
        let bytes = cached ?? files[position].generate()
        if cached == nil {
            state.withLock { $0.recent[inode] = Snapshot(bytes: bytes, takenAt: now) }
        }
        return Attributes(
            inode: inode, kind: .regularFile, permissions: 0o444, size: Int64(bytes.count),
            modificationTime: Int64(Date().timeIntervalSince1970))
    }

    /// The directory's entries, or `nil` when `inode` is not it.
    public func children(of inode: UInt64) -> [DirectoryEntry]? {
        guard inode == Self.directoryInode else { return nil }
        return files.indices.map { DirectoryEntry(name: files[$0].name, inode: Self.fileInode($0), kind: .regularFile) }
    }

    /// Generates the file's contents for a new open file.
    public func open(_ inode: UInt64, flags: Int32) throws(FileSystemError) -> OpenOptions {
        if inode == Self.directoryInode { throw .isDirectory }
        guard let position = fileIndex(inode) else { throw .notFound }
        guard flags & O_ACCMODE == O_RDONLY else { throw .readOnly }
        let bytes = files[position].generate()
        let handle = state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.open[handle] = bytes
            state.recent[inode] = Snapshot(bytes: bytes, takenAt: monotonicSeconds())
            return handle
        }
        return OpenOptions(handle: handle, keepCache: false, directIO: true)
    }

    /// Answers a read of an open control file.
    public func read(handle: UInt64, offset: Int64, size: Int, reply: DataReply) {
        let slice: [UInt8]? = state.withLock { state in
            guard let bytes = state.open[handle] else { return nil }
            let lower = Int(min(max(offset, 0), Int64(bytes.count)))
            let upper = min(bytes.count, lower + size)
            return Array(bytes[lower..<upper])
        }
        guard let slice else {
            reply.fail(.ioError)
            return
        }
        slice.withUnsafeBytes { reply.data($0) }
    }

    /// Forgets an open file's snapshot.
    public func release(handle: UInt64) {
        _ = state.withLock { $0.open.removeValue(forKey: handle) }
    }

    // MARK: - Private methods

    private static func fileInode(_ position: Int) -> UInt64 {
        directoryInode + 4 * (1 + UInt64(position))
    }

    private func fileIndex(_ inode: UInt64) -> Int? {
        guard inode > Self.directoryInode, inode & 3 == 0,
            let position = Int(exactly: (inode - Self.directoryInode) / 4 - 1)
        else {
            return nil
        }
        return position < files.count ? position : nil
    }
}
