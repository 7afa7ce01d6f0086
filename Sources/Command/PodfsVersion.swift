/// The version podfs reports: in `podfs --version` and in the User-Agent
/// of every request, so an origin's operator can tell who is asking.
///
/// The commit comes from the build itself (the BuildCommit plugin reads the
/// checkout before each build); a build from outside a git checkout says
/// "unknown commit" rather than name one it cannot know.
enum PodfsVersion {
    // MARK: - Properties

    static let number = "0.1.0"

    /// The short commit id the binary was built from, `-dirty` when tracked
    /// files had changes; `nil` when the build could not tell.
    static let commit: String? = podfsBuildCommit

    /// `0.1.0 (commit abc1234)`: what `podfs --version` prints.
    static let description = describe(number: number, commit: commit)

    /// `podfs/0.1.0 (FUSE podcast file system)`: names the client
    /// and its version; `-o user_agent=` replaces it.
    static let userAgent = "podfs/\(number) (FUSE podcast file system)"

    // MARK: - Methods

    /// `NUMBER (commit ID)`, or `NUMBER (unknown commit)` without one.
    static func describe(number: String, commit: String?) -> String {
        guard let commit, !commit.isEmpty else { return "\(number) (unknown commit)" }
        return "\(number) (commit \(commit))"
    }
}
