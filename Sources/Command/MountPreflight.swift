import Foundation

/// The checks `podfs mount` makes before it starts a daemon, so a mount that
/// cannot work fails at once with a message that says what to do, rather
/// than in libfuse's words in a log file.
///
/// A stale mount (its daemon ended without unmounting: `kill -9`, a crash)
/// is not an error: it is cleared, with a message, and the mount goes on.
enum MountPreflight {
    // MARK: - Nested types

    /// Why the mount cannot be made.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: - Methods

    /// Throws a `Failure` for a mount point, a device or a permission that
    /// will not do; clears a stale mount on `mountpoint`.
    static func check(mountpoint: String, allowNonEmpty: Bool, fuseOptions: [String]) throws {
        try checkDevice("/dev/fuse")
        try clearStaleMount(mountpoint)
        try checkMountpoint(mountpoint, allowNonEmpty: allowNonEmpty)
        if getuid() != 0 { try checkUserMount(mountpoint, fuseOptions: fuseOptions) }
    }

    // MARK: - Private methods

    private static func checkDevice(_ device: String) throws {
        var info = stat()
        guard stat(device, &info) == 0, info.st_mode & S_IFMT == S_IFCHR else {
            throw Failure(
                "\(device) is missing, so FUSE file systems cannot be mounted here. Load the module "
                    + "(sudo modprobe fuse); in a container, pass the device in (e.g. docker run --device /dev/fuse "
                    + "--cap-add SYS_ADMIN).")
        }
        // libfuse opens the device as the user before it asks fusermount3
        // to mount; the fuse3 package makes it 0666.
        guard access(device, R_OK | W_OK) == 0 else {
            throw Failure(
                "you may not open \(device) (\(String(cString: strerror(errno)))), so you cannot mount FUSE file "
                    + "systems; mount as root, or ask an administrator to make it readable and writable for everyone "
                    + "(chmod 0666 \(device), the fuse3 package's default).")
        }
    }

    /// A mount point whose daemon is gone answers ENOTCONN: unmount it.
    /// (`statvfs`, unlike `stat`, always reaches the daemon: the kernel may
    /// answer a `stat` from its attribute cache.)
    private static func clearStaleMount(_ mountpoint: String) throws {
        guard MountTable.fileSystemType(mountpoint)?.hasPrefix("fuse") == true else { return }
        var info = statvfs()
        guard statvfs(mountpoint, &info) != 0, errno == ENOTCONN || errno == ECONNABORTED else { return }
        let output = run("/bin/sh", ["-c", "fusermount3 -u -z \"$1\" 2>&1 || umount -l \"$1\" 2>&1", "sh", mountpoint])
        guard output.status == 0 else {
            throw Failure(
                "\(mountpoint) is a stale mount (its podfs daemon ended without unmounting) and could not be "
                    + "cleared: \(output.text.trimmingCharacters(in: .whitespacesAndNewlines)). Run "
                    + "'fusermount3 -u -z \(mountpoint)' (as its owner, or root) and mount again.")
        }
        Console.error(
            "podfs: \(mountpoint) was a stale mount left by a daemon that ended without unmounting; cleared it.\n")
    }

    private static func checkMountpoint(_ mountpoint: String, allowNonEmpty: Bool) throws {
        var info = stat()
        guard stat(mountpoint, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOENT {
                throw Failure("the mount point \(mountpoint) does not exist; create it first (mkdir -p \(mountpoint))")
            }
            throw Failure("cannot use the mount point \(mountpoint): \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw Failure("the mount point \(mountpoint) is not a directory; give a directory (mkdir -p DIR)")
        }
        if MountTable.isPodfsMount(mountpoint) {
            let pids = MountTable.daemonPIDs(mountpoint: mountpoint)
            let by = pids.isEmpty ? "" : " (daemon pid \(pids.map(String.init).joined(separator: ", ")))"
            throw Failure(
                "\(mountpoint) is already a podfs mount\(by); unmount it first (podfs unmount \(mountpoint)) "
                    + "or use another directory")
        }
        guard !allowNonEmpty else { return }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: mountpoint)) ?? []
        if let first = entries.sorted().first {
            throw Failure(
                "the mount point \(mountpoint) is not empty (\(entries.count) entries, e.g. '\(first)'); the mount "
                    + "would hide them. Use an empty directory, or add -o nonempty to mount over them.")
        }
    }

    /// What `fusermount3` will refuse a user, said up front.
    private static func checkUserMount(_ mountpoint: String, fuseOptions: [String]) throws {
        let user = String(cString: getpwuid(getuid())?.pointee.pw_name ?? strdup("uid \(getuid())"))
        let found = run("/bin/sh", ["-c", "command -v fusermount3"])
        guard found.status == 0 else {
            throw Failure("fusermount3 is not installed; a user mount needs it (sudo apt-get install fuse3)")
        }
        // fusermount3 opens /dev/fuse and mounts as root for the user.
        let helper = found.text.trimmingCharacters(in: .whitespacesAndNewlines)
        var helperInfo = stat()
        guard stat(helper, &helperInfo) == 0, helperInfo.st_uid == 0, helperInfo.st_mode & S_ISUID != 0 else {
            throw Failure(
                "\(helper) is not setuid root, so users may not mount FUSE file systems on this machine; "
                    + "mount as root, or ask an administrator to run: chmod u+s \(helper)")
        }
        guard access(mountpoint, W_OK) == 0 else {
            var info = stat()
            stat(mountpoint, &info)
            let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
            throw Failure(
                "\(user) may not mount on \(mountpoint): it belongs to \(owner) and \(user) cannot write to it. "
                    + "Mount on a directory you own (e.g. mkdir -p ~/Podcasts).")
        }
        let wanted = fuseOptions.filter { $0 == "allow_other" || $0 == "allow_root" }
        if let option = wanted.first {
            let conf = (try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8)) ?? ""
            let enabled = conf.split(separator: "\n").contains {
                $0.trimmingCharacters(in: .whitespaces) == "user_allow_other"
            }
            guard enabled else {
                throw Failure(
                    "-o \(option) is allowed to users only when /etc/fuse.conf has a line 'user_allow_other'; "
                        + "add it (as root: echo user_allow_other >> /etc/fuse.conf) or mount without -o \(option)")
            }
        }
    }

    private static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, text: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (127, "\(error)") }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
