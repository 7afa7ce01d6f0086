internal import CFuse3
import Dispatch
import Glibc
public import Logging
import Locking

/// Why a mount could not be made, in words a person can act on.
public struct MountError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(_ message: String) { self.message = message }
}

/// Tells the kernel to forget what it cached about a node or a name.
public protocol KernelCacheInvalidator: Sendable {
    /// Drops the kernel's cached attributes and pages of a node.
    func invalidate(inode: UInt64)
    /// Drops the kernel's cached attributes of a node (its size), keeping
    /// its pages: they hold the right bytes, and dropping them would wait
    /// for reads in flight.
    func invalidateAttributes(inode: UInt64)
    /// Drops the kernel's cached lookup of `name` in directory `parent`.
    func invalidate(parent: UInt64, name: String)
}

/// One mounted libfuse low-level session, served by worker threads of our
/// own (`WorkerLoop`).
///
/// Lifecycle: `init` creates the session and mounts; `serve()` serves until
/// unmounted (`fusermount3 -u`, SIGINT, SIGTERM, SIGHUP or `exit()`);
/// `close()` unmounts and destroys the session. Notifications are sent from a queue
/// of their own, never from inside a request handler.
public final class FUSESession: KernelCacheInvalidator, Sendable {
    // MARK: - Nested types

    private enum Lifecycle {
        case mounted
        case stopped
    }

    // MARK: - Properties

    public let mountpoint: String
    /// The libfuse session; immutable after init, freed in `run()`'s end.
    private let session: SessionPointer
    private let operations: Operations
    private let logger: Logger
    /// Guards sending notifications against the session's destruction.
    private let lifecycle = Locked(Lifecycle.mounted)
    private let notifications = DispatchQueue(label: "podfs.fuse.notify")
    /// The loop while `serve` runs it.
    private let loop = Locked<WorkerLoop?>(nil)
    /// The mount was detached by SIGTERM: `close()` must not unmount again.
    private let detached = Locked(false)
    /// The mount point with symbolic links resolved, taken before mounting:
    /// resolving it later would touch the mount (and hang or fail on a dead
    /// one).
    private let resolvedMountpoint: String
    /// `major:minor` of this mount, from /proc/self/mountinfo right after
    /// mounting; nil if it could not be read.
    private let device: String?

    // MARK: - Init

    /// Creates the session and mounts it; the mount is usable (requests
    /// queue in the kernel) once this returns.
    ///
    /// - Parameter options: `-o` options for libfuse (`allow_other`, ...).
    public init(
        mountpoint: String, fileSystemName: String, options: [String],
        fileSystem: any FileSystem, logger: Logger
    ) throws(MountError) {
        self.mountpoint = mountpoint
        self.logger = logger
        let operations = Operations(fileSystem: fileSystem, logger: logger)
        self.operations = operations

        var optionList = ["fsname=\(fileSystemName)", "subtype=podfs"]
        optionList.append(contentsOf: options)
        let arguments = ["podfs", "-o", optionList.joined(separator: ",")]
        var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        cStrings.append(nil)
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: cStrings.count)
        argv.initialize(from: cStrings, count: cStrings.count)
        var args = fuse_args(argc: Int32(arguments.count), argv: argv, allocated: 0)
        var ops = makeLowLevelOperations()
        let userdata = Unmanaged.passUnretained(operations).toOpaque()
        let created = podfs_fuse_session_new(&args, &ops, userdata)
        // libfuse keeps copies of what it needs; a copy of the list it made
        // (allocated) is freed here, ours below.
        fuse_opt_free_args(&args)
        for pointer in cStrings { free(pointer) }
        argv.deallocate()
        guard let created else {
            throw MountError("could not create the FUSE session (bad -o option? see the message above)")
        }
        let resolved: String
        if let pointer = realpath(mountpoint, nil) {
            resolved = String(cString: pointer)
            free(pointer)
        } else {
            resolved = mountpoint
        }
        guard fuse_session_mount(created, mountpoint) == 0 else {
            fuse_session_destroy(created)
            throw MountError(
                "could not mount on \(mountpoint): check that it is an empty directory you own, "
                    + "that /dev/fuse exists and that fusermount3 is installed (see the message above)")
        }
        self.session = SessionPointer(raw: created)
        self.resolvedMountpoint = resolved
        self.device = Self.deviceNumber(atResolvedPath: resolved)
        operations.session.withLock { $0 = SessionPointer(raw: created) }
    }

    // MARK: - Public methods

    /// Serves requests until the file system is unmounted or a termination
    /// signal arrives. Call once, from the thread that should receive
    /// SIGINT/SIGTERM; then stop whatever may still reply and call `close()`.
    ///
    /// - Parameter termGrace: when set, SIGTERM does not stop the loop at
    ///   once: it detaches the mount (as `umount -l`: no new opens), files
    ///   already open are served until they are closed, and the loop ends
    ///   then, or after `termGrace` seconds, whichever comes first. Readers
    ///   of an open file get their data rather than "connection aborted".
    ///
    /// - Returns: the number of the signal that stopped the loop, 0 after an
    ///   unmount or `exit()`, or a negative errno if the device failed.
    @discardableResult
    public func serve(threads: Int = 16, termGrace: Double? = nil) -> Int32 {
        prepareSignals()
        let worker = WorkerLoop(session: session, workers: threads)
        loop.withLock { $0 = worker }
        if let termGrace { TermWatcher.start(session: self, grace: termGrace) }
        let result = worker.run()
        loop.withLock { $0 = nil }
        return result
    }

    /// SIGTERM with a grace period: detach, then stop the loop if files are
    /// still open after `grace` seconds. Runs on the watcher thread.
    func detachThenStop(grace: Double) {
        guard loop.withLock({ $0 }) != nil else { return }
        logger.notice(
            "SIGTERM: detaching the mount; files still open are served until closed",
            metadata: ["grace.seconds": "\(grace)"])
        detachLazily()
        let deadline = monotonicNow() + grace
        while monotonicNow() < deadline {
            if loop.withLock({ $0 }) == nil { return }
            usleep(50_000)
        }
        loop.withLock { running in
            guard let running else { return }
            logger.notice("grace period over: stopping with files still open (their reads fail)")
            running.requestStop()
        }
    }

    /// Unmounts (if still mounted) and frees the session. Replies sent after
    /// this touch freed memory: stop the network thread first.
    public func close() {
        notifications.sync {
            lifecycle.withLock { $0 = .stopped }
        }
        if !detached.withLock({ $0 }) {
            fuse_session_unmount(session.raw)
            // libfuse leaves the mount alone when the kernel has aborted the
            // connection (a write to /sys/fs/fuse/connections/N/abort):
            // without this, a dead mount ("Transport endpoint is not
            // connected") would stay behind. Only a dead mount is ours: the
            // kernel gives a new mount the device number of one just gone,
            // so a podfs mounted here since `fusermount3 -u` returned has
            // ours, and detaching it by path would unmount it (a player
            // found no file in bench/keep).
            if let device, Self.deviceNumber(atResolvedPath: resolvedMountpoint) == device,
                Self.isDeadMount(resolvedMountpoint)
            {
                logger.notice("the FUSE connection was aborted while mounted; detaching the dead mount")
                detachLazily()
            }
        }
        // Closes the device descriptor (ending any file left open).
        fuse_session_destroy(session.raw)
    }

    /// Sets the kernel's read-ahead for this mount to `kib` KiB (at most
    /// `spliceableReadKiB()`), which is also the size of its reads of a
    /// file read in order: at the default 128 KiB a 256 MiB file takes 2,048
    /// requests, at 768 KiB 342.
    ///
    /// Two parts: the mount's backing device in sysfs (root only; for
    /// anyone else the default stays and the debug log says so), and the
    /// answer to the kernel's hello, which would otherwise lower it back to
    /// 128 KiB. Call after `init`, before `serve()`; it does not touch the
    /// mount itself (a `stat` of it would wait for the loop). Returns the
    /// KiB it asked for.
    @discardableResult
    public func setReadAhead(kib: Int) -> Int {
        let limit = Self.spliceableReadKiB()
        let kib = min(kib, limit)
        guard let device else {
            logger.debug("could not find the mount in /proc/self/mountinfo; read-ahead left as is")
            return kib
        }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            logger.debug("read-ahead left at the kernel's default", metadata: ["path": "\(path)", "errno": "\(errno)"])
            return kib
        }
        defer { Glibc.close(fd) }
        let text = Array("\(kib)\n".utf8)
        if write(fd, text, text.count) != text.count {
            logger.debug("read-ahead left at the kernel's default", metadata: ["path": "\(path)", "errno": "\(errno)"])
        } else {
            operations.readAhead.withLock { $0 = UInt32(kib * 1024) }
            logger.debug("read-ahead set", metadata: ["path": "\(path)", "kib": "\(kib)", "limit": "\(limit)"])
        }
        return kib
    }

    /// The largest read (KiB) whose answer libfuse can splice from a cache
    /// file: the answer and its header go through a pipe, which can grow to
    /// `fs.pipe-max-size` (1 MiB unless raised) and must hold 3 pages
    /// more. A larger read is answered by copying through a buffer, which
    /// costs the daemon several times the CPU and makes reads slower
    /// (docs/DESIGN.md, "The read path", read sizes and the kernel).
    public static func spliceableReadKiB() -> Int {
        var pipeMax = 1_048_576
        let fd = open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &bytes, bytes.count)
            Glibc.close(fd)
            let digits = bytes.prefix(max(0, count)).prefix { $0 >= 48 && $0 <= 57 }
            if let value = Int(String(decoding: digits, as: UTF8.self)), value > 0 { pipeMax = value }
        }
        return max(128, (pipeMax - 16 * 1024) / 1024)
    }

    /// Asks the loop to stop (as SIGINT does).
    public func exit() {
        lifecycle.withLock { state in
            guard state == .mounted else { return }
            fuse_session_exit(session.raw)
        }
        loop.withLock { $0?.requestStop() }
    }

    public func invalidate(inode: UInt64) {
        invalidate(inode: inode, pagesFrom: 0)
    }

    public func invalidateAttributes(inode: UInt64) {
        // An offset of -1 tells the kernel to leave the pages alone.
        invalidate(inode: inode, pagesFrom: -1)
    }

    public func invalidate(parent: UInt64, name: String) {
        notifications.async { [self] in
            lifecycle.withLock { state in
                guard state == .mounted else { return }
                _ = name.withCString { pointer in
                    fuse_lowlevel_notify_inval_entry(session.raw, parent, pointer, strlen(pointer))
                }
            }
        }
    }

    // MARK: - Private methods

    private func invalidate(inode: UInt64, pagesFrom offset: Int64) {
        notifications.async { [self] in
            lifecycle.withLock { state in
                guard state == .mounted else { return }
                let rc = fuse_lowlevel_notify_inval_inode(session.raw, inode, off_t(offset), 0)
                if rc != 0 && rc != -ENOENT {
                    logger.debug("inode invalidation failed", metadata: ["inode": "\(inode)", "errno": "\(-rc)"])
                }
            }
        }
    }

    /// `umount -l` on the mount point: root directly, a user through
    /// fusermount3 (which needs the path, not the session's descriptor:
    /// libfuse's own unmount closes it, which would abort open files).
    private func detachLazily() {
        if geteuid() == 0 {
            if umount2(mountpoint, Int32(MNT_DETACH)) != 0 {
                logger.warning("lazy unmount failed", metadata: ["errno": "\(errno)"])
                return
            }
            detached.withLock { $0 = true }
            return
        }
        var pid: pid_t = 0
        let arguments = ["fusermount3", "-u", "-z", "-q", mountpoint]
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        guard posix_spawnp(&pid, "fusermount3", nil, nil, &cArguments, environ) == 0 else {
            logger.warning("could not run fusermount3 -u -z")
            return
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        if status == 0 { detached.withLock { $0 = true } }
    }

    /// Whether the mount on `path` has lost its FUSE connection ("Transport
    /// endpoint is not connected"). Called once this session's descriptor
    /// is closed, so a `stat` of a mount of ours fails at once and cannot
    /// wait for a loop that no longer runs; a live mount there is another's.
    private static func isDeadMount(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) != 0 && errno == ENOTCONN
    }

    /// `major:minor` of the file system mounted on `path` (symbolic links
    /// resolved), from /proc/self/mountinfo (the last matching line: the
    /// newest mount). Reads no file inside the mount.
    private static func deviceNumber(atResolvedPath path: String) -> String? {
        // mountinfo escapes space, tab, newline and backslash as octal.
        var escaped: [UInt8] = []
        for byte in path.utf8 {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x5C: escaped += Array("\\0\(String(byte, radix: 8))".utf8)
            default: escaped.append(byte)
            }
        }
        guard let file = fopen("/proc/self/mountinfo", "r") else { return nil }
        defer { fclose(file) }
        var found: String?
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let fields = String(cString: line).split(separator: " ", maxSplits: 5)
            if fields.count >= 5, Array(fields[4].utf8) == escaped { found = String(fields[2]) }
        }
        return found
    }

    /// A parent (a shell, `swift test`) may have blocked or ignored the
    /// signals the loop waits for; restore them before the loop installs its
    /// handlers (docs/FUSE-SWIFT-NOTES.md, "Signals").
    private func prepareSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        signal(SIGHUP, SIG_DFL)
    }
}

/// The libfuse session pointer, shared read-only between threads (libfuse's
/// notify and exit functions are thread-safe).
struct SessionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
