internal import CFuse3
import Glibc
import Locking

/// A kernel request that must be answered exactly once.
///
/// `take()` hands the request out once; a request never taken is answered
/// `EIO` when the reply object goes away, so no request can hang the caller.
final class PendingRequest: Sendable {
    // MARK: - Properties

    /// The libfuse request; `nil` once answered.
    private let request: Locked<RequestPointer?>

    // MARK: - Init and deinit

    init(_ request: OpaquePointer) {
        self.request = Locked(RequestPointer(raw: request))
    }

    deinit {
        if let pointer = take() {
            fuse_reply_err(pointer, EIO)
        }
    }

    // MARK: - Methods

    /// The request, the first time only.
    func take() -> OpaquePointer? {
        request.withLock { value in
            defer { value = nil }
            return value?.raw
        }
    }

    func fail(_ error: FileSystemError) {
        guard let pointer = take() else { return }
        fuse_reply_err(pointer, error.errno)
    }
}

/// A `fuse_req_t` may be answered from any thread (libfuse allows it); this
/// box lets it cross into a `Locked`.
struct RequestPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Answers a lookup with a node's entry, or an error.
public final class EntryReply: Sendable {
    let pending: PendingRequest

    init(_ request: OpaquePointer) { pending = PendingRequest(request) }

    /// Replies with the node; the kernel caches its name for `entryTimeout`
    /// and its attributes for `attributesTimeout` seconds.
    public func entry(_ attributes: Attributes, entryTimeout: Double, attributesTimeout: Double) {
        guard let request = pending.take() else { return }
        var entry = fuse_entry_param()
        entry.ino = attributes.inode
        entry.generation = 1
        entry.attr = makeStat(attributes)
        entry.attr_timeout = attributesTimeout
        entry.entry_timeout = entryTimeout
        fuse_reply_entry(request, &entry)
    }

    /// Replies "no such name", cached by the kernel for `timeout` seconds.
    public func notFound(timeout: Double) {
        guard let request = pending.take() else { return }
        var entry = fuse_entry_param()
        entry.ino = 0
        entry.entry_timeout = timeout
        fuse_reply_entry(request, &entry)
    }

    public func fail(_ error: FileSystemError) { pending.fail(error) }
}

/// Answers a getattr.
public final class AttributesReply: Sendable {
    let pending: PendingRequest

    init(_ request: OpaquePointer) { pending = PendingRequest(request) }

    public func attributes(_ attributes: Attributes, timeout: Double) {
        guard let request = pending.take() else { return }
        var st = makeStat(attributes)
        fuse_reply_attr(request, &st, timeout)
    }

    public func fail(_ error: FileSystemError) { pending.fail(error) }
}

/// Answers an open.
public final class OpenReply: Sendable {
    let pending: PendingRequest
    let inode: UInt64
    /// For `dropAttributes`; alive as long as replies may be sent.
    let session: SessionPointer?

    init(_ request: OpaquePointer, inode: UInt64, session: SessionPointer?) {
        pending = PendingRequest(request)
        self.inode = inode
        self.session = session
    }

    public func opened(_ options: OpenOptions) {
        guard let request = pending.take() else { return }
        if options.dropAttributes, let session {
            // Only the attributes (offset -1): no page lock is taken, so this
            // is safe while the kernel waits for this open's answer.
            _ = fuse_lowlevel_notify_inval_inode(session.raw, inode, -1, 0)
        }
        var info = fuse_file_info()
        info.fh = options.handle
        info.keep_cache = options.keepCache ? 1 : 0
        info.direct_io = options.directIO ? 1 : 0
        fuse_reply_open(request, &info)
    }

    public func fail(_ error: FileSystemError) { pending.fail(error) }
}

/// Answers a read with bytes (fewer than asked only at the end of the file).
public final class DataReply: Sendable {
    let pending: PendingRequest

    init(_ request: OpaquePointer) { pending = PendingRequest(request) }

    public func data(_ bytes: UnsafeRawBufferPointer) {
        guard let request = pending.take() else { return }
        fuse_reply_buf(request, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    /// Answers with `count` bytes of the open file `descriptor` at
    /// `offset`, spliced from its page cache into the device: the bytes
    /// never pass through a buffer of ours. Fewer bytes are sent if the
    /// file ends sooner; a failed read answers `EIO` (libfuse does).
    /// Returns whether the data went out.
    @discardableResult
    public func file(descriptor: Int32, offset: Int64, count: Int) -> Bool {
        guard let request = pending.take() else { return false }
        return podfs_fuse_reply_fd(request, descriptor, off_t(offset), count) == 0
    }

    public func fail(_ error: FileSystemError) { pending.fail(error) }
}

/// The daemon's user and group, which own every node: asked once, not
/// twice per entry of a listing (two system calls each).
private let owner = (uid: getuid(), gid: getgid())

/// Builds the `struct stat` the kernel sees for a node.
func makeStat(_ attributes: Attributes) -> stat {
    var st = stat()
    st.st_ino = UInt(attributes.inode)
    switch attributes.kind {
    case .directory: st.st_mode = S_IFDIR | attributes.permissions
    case .regularFile: st.st_mode = S_IFREG | attributes.permissions
    }
    st.st_nlink = UInt(attributes.linkCount)
    st.st_size = Int(attributes.size)
    st.st_blksize = 4096
    st.st_blocks = Int(attributes.blockCount)
    st.st_uid = owner.uid
    st.st_gid = owner.gid
    let time = timespec(tv_sec: Int(attributes.modificationTime), tv_nsec: 0)
    st.st_mtim = time
    st.st_ctim = time
    st.st_atim = time
    return st
}
