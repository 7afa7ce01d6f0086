import ArgumentParser
import Foundation
import HTTPClient
import PodFS
import RangeCache

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
    /// `-o proxy=URL`: the only proxy podfs uses (none without it).
    var proxy: HTTPProxy?
    /// `-o refresh=INTERVAL`, as typed.
    var refresh: String?
    /// `-o user_agent=TEXT`: sent instead of podfs's own User-Agent.
    var userAgent: String?
    /// `-o keep_latest=N`: the newest N episodes of each show kept complete.
    var keepLatest: Int?
    /// `sync=URL`: the gpodder-API server the subscriptions sync with.
    var sync: String?
    /// `sync_password_file=FILE`: its password (else `~/.netrc`).
    var syncPasswordFile: String?
    /// `sync_device=NAME`: this mount's device id (default: the host name).
    var syncDevice: String?
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
            for option in Self.split(list) where !option.isEmpty {
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
                case "proxy":
                    guard let value, let parsed = HTTPProxy(value) else {
                        throw ValidationError(
                            "-o proxy needs a proxy URL (\(HTTPProxy.schemes.joined(separator: ", "))), "
                                + "e.g. -o proxy=http://proxy.example:3128")
                    }
                    proxy = parsed
                case "refresh":
                    guard let value, (try? RefreshInterval(value)) != nil else {
                        throw ValidationError("-o refresh needs an interval, e.g. -o refresh=30m, refresh=3600 or refresh=off")
                    }
                    refresh = value
                case "keep_latest":
                    guard let value, let n = KeepPlan.parseLatest(Array(value.utf8)) else {
                        throw ValidationError(
                            "-o keep_latest needs a number of episodes per show from 0 to \(KeepPlan.maximumLatest), e.g. -o keep_latest=3")
                    }
                    keepLatest = n
                case "user_agent":
                    // A control character (CR, LF) would end the header
                    // early and smuggle in another.
                    guard let value, !value.isEmpty, value.utf8.count <= 512,
                        !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
                    else {
                        throw ValidationError(
                            "-o user_agent needs text of at most 512 bytes without control characters, "
                                + "e.g. -o user_agent='MyPlayer/2.0' (write a comma as \\,)")
                    }
                    userAgent = value
                case "sync", "sync_password_file", "sync_device":
                    guard let value, !value.isEmpty else {
                        throw ValidationError(
                            "-o \(name) needs a value, e.g. -o sync=https://alice@gpodder.net,"
                                + "sync_password_file=~/.config/podfs/sync-password,sync_device=laptop")
                    }
                    if name == "sync" { sync = value }
                    if name == "sync_password_file" { syncPasswordFile = value }
                    if name == "sync_device" { syncDevice = value }
                case "allow_other", "allow_root", "auto_unmount":
                    fuseOptions.append(name)
                case _ where Self.ignored.contains(name) || name.hasPrefix("x-systemd.") || name.hasPrefix("comment="):
                    continue
                default:
                    if try daemon.parse(name: name, value: value) { continue }
                    throw ValidationError(
                        "unknown mount option '\(option)'. podfs takes -o cache_dir=DIR, cache_size=SIZE, max_feed_size=SIZE, "
                            + "refresh=INTERVAL, keep_latest=N, allow_private, proxy=URL, user_agent=TEXT, sync=URL, sync_password_file=FILE, sync_device=NAME, allow_other, allow_root, auto_unmount, " + DaemonOptions.summary + " "
                            + "(and ignores fstab's auto, noauto, user, _netdev, nofail, x-systemd.*).")
                }
            }
        }
    }
}

extension MountOptions {
    /// The options of one `-o` list, split at commas as libfuse splits
    /// them: a backslash takes the next character as it is, so `\,` is a
    /// comma inside a value (`cache_dir=/srv/a\,b`) and `\\` a backslash.
    /// A backslash at the very end stays. (libfuse's `\ooo` octal escapes are
    /// not read: they could write a NUL into a path.)
    static func split(_ list: String) -> [String] {
        var options: [String] = []
        var current = ""
        var characters = list.makeIterator()
        while let character = characters.next() {
            switch character {
            case "\\":
                current.append(characters.next() ?? "\\")
            case ",":
                options.append(current)
                current = ""
            default:
                current.append(character)
            }
        }
        options.append(current)
        return options
    }
}

/// How often feeds are fetched again: seconds (`90`, `90s`), minutes (`30m`),
/// hours (`1h`), or `off`.
struct RefreshInterval {
    /// The default: every 30 minutes.
    static let defaultSeconds: Double = 30 * 60

    /// Seconds, or `nil` for never.
    let seconds: Double?

    init(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if ["off", "never", "none", "0"].contains(trimmed) {
            seconds = nil
            return
        }
        var number = trimmed
        var multiplier: Double = 1
        if let last = number.last, let unit = ["s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0][String(last)] {
            multiplier = unit
            number.removeLast()
        }
        guard let value = Double(number), value.isFinite, value > 0, value * multiplier <= 366 * 86_400 else {
            throw ValidationError("'\(text)' is not a refresh interval; write e.g. 30m, 1h, 3600 (seconds) or off")
        }
        // Faster would hammer the origins for nothing.
        guard value * multiplier >= 1 else {
            throw ValidationError("a refresh interval of '\(text)' is too short; the shortest is 1 second (1s)")
        }
        seconds = value * multiplier
    }
}
