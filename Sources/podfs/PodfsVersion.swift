/// The version podfs reports: in `podfs --version` and in the User-Agent
/// of every request, so an origin's operator can tell who is asking.
enum PodfsVersion {
    static let number = "0.1.0"

    /// `podfs/0.1.0 (FUSE podcast file system)`: names the client
    /// and its version; `-o user_agent=` replaces it.
    static let userAgent = "podfs/\(number) (FUSE podcast file system)"
}
