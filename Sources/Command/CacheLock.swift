import FUSEBridge
import Foundation
import RangeCache

/// One process at a time uses a cache directory: a mount holds an exclusive
/// `flock` on `<cache-dir>/lock` for its whole life, and `podfs cache
/// verify` and `podfs cache clear` hold it while they work.
///
/// The holder writes who it is into the file (`pid`, then what it does), so
/// a command that finds the directory busy can say which mount to unmount.
/// The lock dies with its process, also after `kill -9`.
final class CacheLock {
    // MARK: - Nested types

    /// Who holds the lock, as written into the lock file.
    enum Owner {
        case mount(String)
        case maintenance(String)

        var line: String {
            switch self {
            case .mount(let mountpoint): "mount \(mountpoint)"
            case .maintenance(let command): "command \(command)"
            }
        }
    }

    // MARK: - Private properties

    /// The lock file's descriptor while held; -1 after `release()`.
    private var descriptor: Int32

    // MARK: - Init

    /// Takes the lock, waiting up to `wait` seconds for another holder (a
    /// daemon still saving its index) to let go; throws a `MountError` that
    /// names the holder when it does not, at once when the holder is a
    /// mount still mounted.
    init(directory: String, owner: Owner, wait: Double = 20) throws {
        let made = CachePrivacy.makeDirectory(directory)
        guard made == 0 else {
            throw MountError("cannot create the cache directory \(directory): \(String(cString: strerror(made)))")
        }
        let path = directory + "/lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw MountError("cannot open \(path): \(String(cString: strerror(errno))); check the cache directory's permissions")
        }
        let deadline = Date().addingTimeInterval(wait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            // A daemon that unmounted may still be saving: worth the wait.
            // One still mounted will not let go.
            guard Date() < deadline, !Self.heldByAMount(path: path) else {
                let holder = Self.holder(path: path)
                close(descriptor)
                throw MountError(Self.busyMessage(directory: directory, holder: holder, owner: owner))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let record = "\(getpid()) \(owner.line)\n"
        ftruncate(descriptor, 0)
        _ = record.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    // MARK: - Methods

    /// Lets go of the lock (also done by the kernel when the process ends).
    func release() {
        guard descriptor >= 0 else { return }
        ftruncate(descriptor, 0)
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    /// Whether a process holds the lock of `directory` now: a mount, or a
    /// cache command at work.
    static func isHeld(directory: String) -> Bool {
        let descriptor = open(directory + "/lock", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(descriptor, LOCK_UN)
        return false
    }

    // MARK: - Private methods

    /// Whether the holder is a mount whose mount point is still mounted.
    private static func heldByAMount(path: String) -> Bool {
        guard let mountpoint = holder(path: path).flatMap(mountpoint(of:)) else { return false }
        return MountTable.isPodfsMount(mountpoint)
    }

    /// The mount point of a holder that is a mount (`Owner.mount`'s line).
    private static func mountpoint(of holder: (pid: Int32, what: String)) -> String? {
        holder.what.hasPrefix("mount ") ? String(holder.what.dropFirst(6)) : nil
    }

    /// What the holder wrote: its pid and what it does, if readable.
    private static func holder(path: String) -> (pid: Int32, what: String)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first ?? ""
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, let pid = Int32(parts[0]) else { return nil }
        return (pid, parts[1])
    }

    private static func busyMessage(directory: String, holder: (pid: Int32, what: String)?, owner: Owner) -> String {
        var who = "another podfs process"
        var unmount = "unmount it first"
        if let holder {
            if let mountpoint = mountpoint(of: holder) {
                who = "the podfs mount on \(mountpoint) (pid \(holder.pid))"
                unmount = "unmount it first (podfs unmount '\(mountpoint)')"
            } else if holder.what.hasPrefix("command ") {
                who = "'podfs \(holder.what.dropFirst(8))' (pid \(holder.pid))"
                unmount = "wait for it to finish"
            }
        }
        switch owner {
        case .mount:
            return "\(who) is using the cache directory \(directory); \(unmount) or give this mount its own --cache-dir"
        case .maintenance(let command):
            return "\(who) is using the cache directory \(directory); \(unmount), then run 'podfs \(command)' again. "
                + "Nothing was changed."
        }
    }
}
