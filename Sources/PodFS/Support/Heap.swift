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
    public static func giveBackFreedMemory() {
        _ = trim?(0)
    }

    // MARK: - Private properties

    private typealias Trim = @convention(c) (Int) -> Int32

    private static let trim: Trim? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: Trim.self)
    }()
}
