import ArgumentParser
import Foundation

/// The `-o` options: podfs's own, libfuse's, and fstab's (ignored).
struct MountOptions {
    /// Options handed to libfuse (`allow_other`, ...).
    var fuseOptions: [String] = []
    var cacheDirectory: String?
    /// `-o cache_size=SIZE`, as typed.
    var cacheSize: String?
    /// `-o max_feed_size=SIZE`, as typed.
    var maxFeedSize: String?
    /// `-o allow_private`: feeds may send podfs to any address.
    var allowPrivate = false
    /// The rest of the CLI's options (`log_file=`, `log_level=`, `syslog`,
    /// `commit_interval=`, `revalidate_after=`, `debug`, `nonempty`).
    var daemon = DaemonOptions()

    /// fstab and mount(8) options that mean nothing to podfs.
    private static let ignored: Set<String> = [
        "auto", "noauto", "user", "users", "nouser", "_netdev", "nofail", "rw", "ro", "defaults",
        "dev", "nodev", "suid", "nosuid", "exec", "noexec", "async", "sync", "atime", "noatime",
        "relatime",
    ]

    /// Parses `-o a,b=c` lists; throws a `ValidationError` naming what to type instead.
    init(_ lists: [String]) throws {
        for list in lists {
            for option in list.split(separator: ",").map(String.init) where !option.isEmpty {
                let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
                let name = parts[0]
                let value = parts.count > 1 ? parts[1] : nil
                switch name {
                case "cache_dir":
                    guard let value, !value.isEmpty else {
                        throw ValidationError("-o cache_dir needs a directory, e.g. -o cache_dir=~/.cache/podfs")
                    }
                    cacheDirectory = value
                case "cache_size":
                    guard let value, (try? CacheSize(value)) != nil else {
                        throw ValidationError("-o cache_size needs a size, e.g. -o cache_size=10G")
                    }
                    cacheSize = value
                case "max_feed_size":
                    guard let value, let size = try? CacheSize(value), size.bytes != nil else {
                        throw ValidationError("-o max_feed_size needs a size, e.g. -o max_feed_size=64M")
                    }
                    maxFeedSize = value
                case "allow_private":
                    allowPrivate = true
                case "allow_other", "allow_root", "auto_unmount":
                    fuseOptions.append(name)
                case _ where Self.ignored.contains(name) || name.hasPrefix("x-systemd.") || name.hasPrefix("comment="):
                    continue
                default:
                    if try daemon.parse(name: name, value: value) { continue }
                    throw ValidationError(
                        "unknown mount option '\(option)'. podfs takes -o cache_dir=DIR, cache_size=SIZE, max_feed_size=SIZE, "
                            + "allow_private, allow_other, allow_root, " + DaemonOptions.summary + " "
                            + "(and ignores fstab's auto, noauto, user, _netdev, nofail, x-systemd.*).")
                }
            }
        }
    }
}

/// A cache size as typed: `500M`, `10G`, `1.5T`, plain bytes, or `none`.
/// K, M, G and T are powers of 1024 (an optional trailing `B` or `iB` is
/// accepted).
struct CacheSize {
    /// Bytes, or `nil` for no cap.
    let bytes: Int64?

    init(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces).uppercased()
        if trimmed == "NONE" || trimmed == "UNLIMITED" {
            bytes = nil
            return
        }
        var number = trimmed
        for suffix in ["IB", "B"] where number.hasSuffix(suffix) && number.count > suffix.count {
            number.removeLast(suffix.count)
            break
        }
        var multiplier: Double = 1
        if let last = number.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
            multiplier = pow(1024, Double(power))
            number.removeLast()
        }
        guard let value = Double(number), value.isFinite, value > 0, value * multiplier < 9e18 else {
            throw ValidationError("'\(text)' is not a cache size; write e.g. 500M, 10G or none")
        }
        bytes = Int64(value * multiplier)
    }
}
