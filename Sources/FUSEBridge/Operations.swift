internal import CFuse3
import Glibc
import Locking
import Logging

/// The Swift owner behind libfuse's userdata pointer: forwards each request
/// to the file system with a one-shot reply.
final class Operations: Sendable {
    // MARK: - Properties

    let fileSystem: any FileSystem
    let logger: Logger
    /// Each open directory's listing, taken at opendir: the kernel pages
    /// through it with offsets, and a snapshot keeps those offsets stable
    /// and costs one listing per `ls`, not one per page.
    private let listings = Locked<[UInt64: [DirectoryEntry]]>([:])
    private let nextListing = Locked<UInt64>(1)
    /// The read-ahead (bytes) to ask for when the kernel says hello, if
    /// set before the session serves (`FUSESession.setReadAhead`).
    let readAhead = Locked<UInt32?>(nil)
    /// The session, once created: an open's answer may first drop the
    /// kernel's attributes of the file (`OpenOptions.dropAttributes`).
    let session = Locked<SessionPointer?>(nil)

    // MARK: - Init

    init(fileSystem: any FileSystem, logger: Logger) {
        self.fileSystem = fileSystem
        self.logger = logger
    }

    // MARK: - Methods

    static func from(request: OpaquePointer?) -> Operations {
        Unmanaged<Operations>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }

    /// Snapshots a directory's entries (with `.` and `..` first) for
    /// readdir; answers with the snapshot's handle.
    func doOpendir(request: OpaquePointer, inode: UInt64, info: UnsafeMutablePointer<fuse_file_info>) {
        let entries: [DirectoryEntry]
        do {
            entries = try fileSystem.readdir(inode: inode)
        } catch {
            fuse_reply_err(request, error.errno)
            return
        }
        let all = [DirectoryEntry(name: ".", inode: inode, kind: .directory),
                   DirectoryEntry(name: "..", inode: 1, kind: .directory)] + entries
        let handle = nextListing.withLock { next in
            defer { next += 1 }
            return next
        }
        listings.withLock { $0[handle] = all }
        info.pointee.fh = handle
        info.pointee.cache_readdir = 0
        fuse_reply_open(request, info)
    }

    func doReleasedir(request: OpaquePointer, handle: UInt64) {
        listings.withLock { $0[handle] = nil }
        fuse_reply_err(request, 0)
    }

    /// Fills a readdir (or, with `plus`, readdirplus) buffer from `offset`
    /// (an index into the snapshot) with as many entries as fit in `size`.
    func doReaddir(request: OpaquePointer, handle: UInt64, size: Int, offset: Int64, plus: Bool) {
        guard let all = listings.withLock({ $0[handle] }) else {
            fuse_reply_err(request, EBADF)
            return
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        defer { buffer.deallocate() }
        var used = 0
        var index = Int(max(0, offset))
        while index < all.count {
            let entry = all[index]
            let needed: Int
            if plus {
                // `.` and `..` carry no entry: the kernel does not link them.
                var parameter = fuse_entry_param()
                let isDot = entry.name == "." || entry.name == ".."
                let attributes = isDot
                    ? nil
                    : fileSystem.listedAttributes(inode: entry.inode)
                        ?? entry.attributes.map { ($0, entry.attributesTimeout) }
                if let (attributes, timeout) = attributes {
                    parameter.ino = fuse_ino_t(entry.inode)
                    // The same generation as a lookup's: when the entry
                    // expires, the kernel's lookup would otherwise see
                    // another generation, take the inode for a reused one
                    // and fail every read and close on its open files (EIO).
                    parameter.generation = 1
                    parameter.attr = makeStat(attributes)
                    parameter.attr_timeout = timeout
                    parameter.entry_timeout = entry.entryTimeout
                } else {
                    parameter.attr.st_ino = UInt(entry.inode)
                    parameter.attr.st_mode = entry.kind == .directory ? S_IFDIR : S_IFREG
                }
                needed = entry.name.withCString { name in
                    fuse_add_direntry_plus(request, buffer + used, size - used, name, &parameter, off_t(index + 1))
                }
            } else {
                var st = stat()
                st.st_ino = UInt(entry.inode)
                st.st_mode = entry.kind == .directory ? S_IFDIR : S_IFREG
                needed = entry.name.withCString { name in
                    fuse_add_direntry(request, buffer + used, size - used, name, &st, off_t(index + 1))
                }
            }
            if needed > size - used { break }
            used += needed
            index += 1
        }
        fuse_reply_buf(request, buffer, used)
    }

    func doGetxattr(request: OpaquePointer, inode: UInt64, name: String, size: Int) {
        do {
            let value = try fileSystem.getxattr(inode: inode, name: name)
            replyXattr(request: request, bytes: value, size: size)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    func doListxattr(request: OpaquePointer, inode: UInt64, size: Int) {
        do {
            let names = try fileSystem.listxattr(inode: inode)
            var bytes: [UInt8] = []
            for name in names {
                bytes.append(contentsOf: name.utf8)
                bytes.append(0)
            }
            replyXattr(request: request, bytes: bytes, size: size)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    func doSetxattr(request: OpaquePointer, inode: UInt64, name: String, value: [UInt8]) {
        do {
            try fileSystem.setxattr(inode: inode, name: name, value: value, caller: fuse_req_ctx(request).pointee.uid)
            fuse_reply_err(request, 0)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    func doRemovexattr(request: OpaquePointer, inode: UInt64, name: String) {
        do {
            try fileSystem.removexattr(inode: inode, name: name, caller: fuse_req_ctx(request).pointee.uid)
            fuse_reply_err(request, 0)
        } catch {
            fuse_reply_err(request, error.errno)
        }
    }

    /// A size of 0 asks for the length only; a too-small buffer is ERANGE.
    private func replyXattr(request: OpaquePointer, bytes: [UInt8], size: Int) {
        if size == 0 {
            fuse_reply_xattr(request, bytes.count)
        } else if size < bytes.count {
            fuse_reply_err(request, ERANGE)
        } else {
            bytes.withUnsafeBytes { raw in
                _ = fuse_reply_buf(request, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
            }
        }
    }
}

// MARK: - C callbacks

/// The operations table. Built in nonisolated library functions so the
/// closures inherit no actor isolation (docs/FUSE-SWIFT-NOTES.md,
/// "Running"). Each closure captures nothing, so it stays a C function
/// pointer; one that needs its `Operations` finds it through the request
/// (`Operations.from(request:)`) or, in `init`, the userdata.
func makeLowLevelOperations() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    setLookupOperations(&ops)
    setFileOperations(&ops)
    setDirectoryOperations(&ops)
    setXattrOperations(&ops)
    setChangeOperations(&ops)
    setSessionOperations(&ops)
    return ops
}

/// Lookup and attributes: `lookup`, `getattr`.
private func setLookupOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.lookup = { request, parent, name in
        let name = String(cString: name!)
        Operations.from(request: request).fileSystem.lookup(
            parent: parent, name: name, reply: EntryReply(request!))
    }
    ops.getattr = { request, inode, _ in
        Operations.from(request: request).fileSystem.getattr(inode: inode, reply: AttributesReply(request!))
    }
}

/// Regular files: `open` (read-only), `read`, `release`.
private func setFileOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.open = { request, inode, info in
        let flags = info!.pointee.flags
        // O_TRUNC too: it reaches the open (atomic O_TRUNC is off, but an
        // older kernel may still send it), and nothing else refuses it.
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 {
            fuse_reply_err(request, EROFS)
            return
        }
        let operations = Operations.from(request: request)
        let reply = OpenReply(request!, inode: inode, session: operations.session.withLock { $0 })
        operations.fileSystem.open(inode: inode, flags: flags, reply: reply)
    }
    ops.read = { request, inode, size, offset, info in
        let handle = info!.pointee.fh
        // The kernel never sends a read whose end passes `Int64.max`; held
        // to that here, `offset + size` is safe in every file system.
        let offset = max(Int64(offset), 0)
        let size = Int(min(Int64(clamping: size), Int64.max - offset))
        Operations.from(request: request).fileSystem.read(
            inode: inode, handle: handle, offset: offset, size: size, reply: DataReply(request!))
    }
    ops.release = { request, inode, info in
        let handle = info!.pointee.fh
        Operations.from(request: request).fileSystem.release(inode: inode, handle: handle)
        fuse_reply_err(request, 0)
    }
}

/// Directories: `opendir`, `releasedir`, `readdir`, `readdirplus`.
private func setDirectoryOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.opendir = { request, inode, info in
        Operations.from(request: request).doOpendir(request: request!, inode: inode, info: info!)
    }
    ops.releasedir = { request, _, info in
        Operations.from(request: request).doReleasedir(request: request!, handle: info!.pointee.fh)
    }
    ops.readdir = { request, _, size, offset, info in
        Operations.from(request: request).doReaddir(
            request: request!, handle: info!.pointee.fh, size: size, offset: Int64(offset), plus: false)
    }
    ops.readdirplus = { request, _, size, offset, info in
        Operations.from(request: request).doReaddir(
            request: request!, handle: info!.pointee.fh, size: size, offset: Int64(offset), plus: true)
    }
}

/// Extended attributes: get, list, set and remove.
private func setXattrOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.getxattr = { request, inode, name, size in
        Operations.from(request: request).doGetxattr(
            request: request!, inode: inode, name: String(cString: name!), size: size)
    }
    ops.listxattr = { request, inode, size in
        Operations.from(request: request).doListxattr(request: request!, inode: inode, size: size)
    }
    ops.setxattr = { request, inode, name, value, size, _ in
        let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
        Operations.from(request: request).doSetxattr(
            request: request!, inode: inode, name: String(cString: name!), value: bytes)
    }
    ops.removexattr = { request, inode, name in
        Operations.from(request: request).doRemovexattr(request: request!, inode: inode, name: String(cString: name!))
    }
}

/// `access`, and every change to the tree, refused as read-only.
private func setChangeOperations(_ ops: inout fuse_lowlevel_ops) {
    // The mount is not mounted "ro" (a read-only mount refuses every
    // setxattr before it reaches podfs, and pins and keep settings are
    // extended attributes), so each change to the tree is refused here,
    // as a read-only file system refuses it.
    ops.access = { request, inode, mask in
        fuse_reply_err(request, Operations.from(request: request).fileSystem.access(inode: inode, mask: mask))
    }
    ops.setattr = { request, _, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.mknod = { request, _, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.mkdir = { request, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.unlink = { request, _, _ in fuse_reply_err(request, EROFS) }
    ops.rmdir = { request, _, _ in fuse_reply_err(request, EROFS) }
    ops.symlink = { request, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.rename = { request, _, _, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.link = { request, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.create = { request, _, _, _, _ in fuse_reply_err(request, EROFS) }
    ops.fallocate = { request, _, _, _, _, _ in fuse_reply_err(request, EROFS) }
}

/// The session: `init` (the capabilities asked for) and `statfs`.
private func setSessionOperations(_ ops: inout fuse_lowlevel_ops) {
    ops.statfs = { request, _ in
        let stats = Operations.from(request: request).fileSystem.statfs()
        var sv = statvfs()
        sv.f_bsize = UInt(stats.blockSize)
        sv.f_frsize = UInt(stats.blockSize)
        sv.f_blocks = UInt(stats.totalBlocks)
        sv.f_bfree = UInt(stats.freeBlocks)
        sv.f_bavail = UInt(stats.freeBlocks)
        sv.f_files = UInt(stats.files)
        sv.f_namemax = 255
        fuse_reply_statfs(request, &sv)
    }
    ops.`init` = { userdata, connection in
        guard let connection else { return }
        // The kernel keeps the smaller of the mount's read-ahead and this
        // answer (which libfuse would leave at the 128 KiB it was offered),
        // and sizes its reads by it.
        if let userdata,
            let bytes = Unmanaged<Operations>.fromOpaque(userdata).takeUnretainedValue().readAhead.withLock({ $0 })
        {
            connection.pointee.max_readahead = bytes
        }
        // Reads wait on the network; let the kernel send several at once.
        connection.pointee.want |= UInt32(FUSE_CAP_ASYNC_READ)
        // Without it the kernel sends an O_TRUNC open as a SETATTR of size
        // 0 first, which is refused (EROFS); with it, the open would carry
        // the truncation, and a read-only file system has none to do.
        connection.pointee.want &= ~UInt32(FUSE_CAP_ATOMIC_O_TRUNC)
        // The file system tells the kernel itself when an episode's bytes
        // change (inode invalidation); libfuse's default "auto_inval_data"
        // would also make every read of a file whose attributes expired (an
        // episode whose size is unconfirmed: always) wait for a GETATTR.
        connection.pointee.want &= ~UInt32(FUSE_CAP_AUTO_INVAL_DATA)
        // Reads answered from a cache file are spliced from its page cache
        // (`DataReply.file`): one copy less per byte.
        if connection.pointee.capable & UInt32(FUSE_CAP_SPLICE_WRITE) != 0 {
            connection.pointee.want |= UInt32(FUSE_CAP_SPLICE_WRITE)
        }
        // Listings carry attributes (READDIRPLUS), always, not only when the
        // kernel guesses a stat will follow: `ls -l` then costs no lookups.
        if connection.pointee.capable & UInt32(FUSE_CAP_READDIRPLUS) != 0 {
            connection.pointee.want |= UInt32(FUSE_CAP_READDIRPLUS)
            connection.pointee.want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
        }
    }
}
