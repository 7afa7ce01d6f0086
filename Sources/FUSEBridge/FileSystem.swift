import Glibc
/// What a file system served through FUSE must answer.
///
/// The bridge knows nothing of podcasts. Each method that may wait (lookup,
/// getattr, open, read) answers through a one-shot reply object, possibly
/// later and from any thread; a reply dropped unsent answers `EIO`. Methods
/// are called on libfuse's worker threads and must not block on the network.
public protocol FileSystem: AnyObject, Sendable {
    func lookup(parent: UInt64, name: String, reply: EntryReply)
    func getattr(inode: UInt64, reply: AttributesReply)
    /// All entries of a directory (without `.` and `..`), in a stable order.
    func readdir(inode: UInt64) throws(FileSystemError) -> [DirectoryEntry]
    /// The attributes of a listed node as they are now, and how long the
    /// kernel may keep them, for a readdirplus page built after the listing
    /// was taken; nil keeps the listing's own. A listing's pages can come
    /// long after it was taken (`ls` of a big directory), and attributes
    /// from then could undo what an open since has told the kernel.
    func listedAttributes(inode: UInt64) -> (Attributes, Double)?
    func open(inode: UInt64, flags: Int32, reply: OpenReply)
    func read(inode: UInt64, handle: UInt64, offset: Int64, size: Int, reply: DataReply)
    func release(inode: UInt64, handle: UInt64)
    /// The value of an extended attribute.
    func getxattr(inode: UInt64, name: String) throws(FileSystemError) -> [UInt8]
    /// The names of the extended attributes of a node.
    func listxattr(inode: UInt64) throws(FileSystemError) -> [String]
    /// `access(2)`: 0, or the errno for `mask` (`R_OK`, `W_OK`, `X_OK`).
    /// The kernel leaves permissions to the file system (the mount has no
    /// `default_permissions`, so a setxattr reaches it and is judged by
    /// who asks), and asks this for `access(2)` and `chdir`.
    func access(inode: UInt64, mask: Int32) -> Int32
    /// Sets an extended attribute, asked by the user `caller` (uid).
    func setxattr(inode: UInt64, name: String, value: [UInt8], caller: UInt32) throws(FileSystemError)
    /// Removes an extended attribute, asked by the user `caller` (uid).
    func removexattr(inode: UInt64, name: String, caller: UInt32) throws(FileSystemError)
    func statfs() -> FileSystemStatistics
}

extension FileSystem {
    public func listedAttributes(inode: UInt64) -> (Attributes, Double)? { nil }
    /// A read-only file system: nothing is writable.
    public func access(inode: UInt64, mask: Int32) -> Int32 {
        mask & W_OK != 0 ? EROFS : 0
    }
    /// A read-only file system: no attribute can be set.
    public func setxattr(inode: UInt64, name: String, value: [UInt8], caller: UInt32) throws(FileSystemError) {
        throw .readOnly
    }
    public func removexattr(inode: UInt64, name: String, caller: UInt32) throws(FileSystemError) {
        throw .readOnly
    }
}

/// The attributes of a node, as `stat` shows them.
public struct Attributes: Sendable, Equatable {
    public enum Kind: Sendable { case directory, regularFile }

    public var inode: UInt64
    public var kind: Kind
    /// Permission bits (e.g. `0o444`).
    public var permissions: UInt32
    public var size: Int64
    /// Modification time, seconds since the epoch (UTC).
    public var modificationTime: Int64
    public var linkCount: UInt32

    public init(
        inode: UInt64, kind: Kind, permissions: UInt32, size: Int64,
        modificationTime: Int64, linkCount: UInt32 = 1
    ) {
        self.inode = inode
        self.kind = kind
        self.permissions = permissions
        self.size = size
        self.modificationTime = modificationTime
        self.linkCount = linkCount
    }

    /// 512-byte blocks for `st_blocks`, rounded up, for every size: no
    /// `size + 511` that overflows near `Int64.max`; a negative size has
    /// none.
    public var blockCount: Int64 {
        guard size > 0 else { return 0 }
        return size / 512 + (size % 512 == 0 ? 0 : 1)
    }
}

/// A name in a directory, with the node's attributes when the file system
/// can give them at no cost (then `ls -l` needs no lookup per entry: the
/// bridge answers READDIRPLUS with them).
public struct DirectoryEntry: Sendable, Equatable {
    public var name: String
    public var inode: UInt64
    public var kind: Attributes.Kind
    public var attributes: Attributes?
    /// How long the kernel may keep the name and the attributes.
    public var entryTimeout: Double
    public var attributesTimeout: Double

    public init(
        name: String, inode: UInt64, kind: Attributes.Kind, attributes: Attributes? = nil,
        entryTimeout: Double = 0, attributesTimeout: Double = 0
    ) {
        self.name = name
        self.inode = inode
        self.kind = kind
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributesTimeout = attributesTimeout
    }
}

/// How the kernel should treat an opened file.
public struct OpenOptions: Sendable {
    /// The file handle passed back with every read and the release.
    public var handle: UInt64
    /// Keep the kernel's page cache from earlier opens (the bytes did not change).
    public var keepCache: Bool
    /// Bypass the page cache.
    public var directIO: Bool
    /// The kernel may hold attributes of the file that this open found out
    /// of date (a size it was told before the true one was known): they are
    /// dropped before the open returns, so a read past the old size asks
    /// for the new one. An asynchronous invalidation could arrive after the
    /// first read.
    public var dropAttributes: Bool

    public init(handle: UInt64, keepCache: Bool = false, directIO: Bool = false, dropAttributes: Bool = false) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
        self.dropAttributes = dropAttributes
    }
}

/// What `statfs` (and `df`) show.
public struct FileSystemStatistics: Sendable {
    public var blockSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var files: UInt64

    public init(blockSize: UInt64, totalBlocks: UInt64, freeBlocks: UInt64, files: UInt64) {
        self.blockSize = blockSize
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.files = files
    }
}
