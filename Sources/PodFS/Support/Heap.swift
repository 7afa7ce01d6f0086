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

    // MARK: - Private properties

    private typealias Trim = @convention(c) (Int) -> Int32

    private static let trim: Trim? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") else { return nil }
        let sanitizers = ["__tsan_init", "__asan_init", "__msan_init"]
        if sanitizers.contains(where: { dlsym(handle, $0) != nil }) { return nil }
        return unsafeBitCast(symbol, to: Trim.self)
    }()
}
