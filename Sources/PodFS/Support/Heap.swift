import Foundation
import Glibc

/// The process heap.
public enum Heap {
    // MARK: - Methods

    /// Returns freed heap memory to the system (glibc's `malloc_trim`).
    ///
    /// Parsing a large feed allocates tens of MB that are freed right away;
    /// glibc keeps them mapped otherwise, so a mount of a large feed would
    /// stay as large as its parse. `malloc_trim` is not in Swift's Glibc
    /// module (no `malloc.h`), so it is looked up once; where it does not
    /// exist this does nothing.
    ///
    /// Under a sanitizer it does nothing either: the sanitizer's runtime
    /// replaces malloc, glibc's arenas are never set up, and `malloc_trim`
    /// walks them and crashes (a SEGV at address 8 under the thread
    /// sanitizer, which killed a mount in CI).
    public static func giveBackFreedMemory() {
        _ = trim?(0)
    }

    /// Lets glibc keep at most one heap arena per core (at least two),
    /// where it would make up to eight per core. Call it before the
    /// mount's threads start.
    ///
    /// Shows are built on whichever thread asks (a FUSE worker's lookup,
    /// a refresh, the background pass), and each thread that meets a busy
    /// arena gets one of its own: the memory a build frees stays in that
    /// arena, unused by the next build on another thread: a thousand shows
    /// built cold peaked well over their memory target (bench/HISTORY.md).
    /// An arena limit in the environment (`MALLOC_ARENA_MAX`, or
    /// `glibc.malloc.arena_max` in `GLIBC_TUNABLES`) is the user's choice
    /// and is left as it is; under a sanitizer this does nothing (see
    /// `giveBackFreedMemory`).
    public static func limitArenas(cores: Int) {
        let environment = ProcessInfo.processInfo.environment
        guard environment["MALLOC_ARENA_MAX"] == nil,
            environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.arena_max") != true, let mallopt
        else { return }
        _ = mallopt(arenaMax, Int32(max(2, cores)))
    }

    // MARK: - Private properties

    private typealias Trim = @convention(c) (Int) -> Int32
    private typealias MallOpt = @convention(c) (Int32, Int32) -> Int32

    /// `M_ARENA_MAX` of glibc's `malloc.h`.
    private static let arenaMax: Int32 = -8

    private static let trim: Trim? = glibcHeapFunction("malloc_trim").map { unsafeBitCast($0, to: Trim.self) }
    private static let mallopt: MallOpt? = glibcHeapFunction("mallopt").map { unsafeBitCast($0, to: MallOpt.self) }

    // MARK: - Private methods

    /// One of glibc's heap functions, which Swift's Glibc module does not
    /// declare (no `malloc.h`); `nil` where it does not exist, or under a
    /// sanitizer, whose runtime replaces malloc.
    private static func glibcHeapFunction(_ name: String) -> UnsafeMutableRawPointer? {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, name) else { return nil }
        let sanitizers = ["__tsan_init", "__asan_init", "__msan_init"]
        if sanitizers.contains(where: { dlsym(handle, $0) != nil }) { return nil }
        return symbol
    }
}
