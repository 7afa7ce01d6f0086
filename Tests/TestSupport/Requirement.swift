public import Testing

#if canImport(Glibc)
internal import Glibc
#endif
internal import Foundation

/// What a test needs from the machine it runs on (root, `/dev/fuse`, a
/// program, the shared feed corpus), and what happens when it is missing.
///
/// A test that cannot run skips, saying what is missing and how to get it.
/// With `PODFS_CI=1` in the environment (as `.ci/run` sets it) the same
/// test fails with the same message instead: a suite CI needs can never be
/// skipped while the run stays green. Every such condition goes through
/// `ConditionTrait.needs(_:)`.
public enum Requirement {
    // MARK: - Properties

    /// Whether a missing need fails the test (`PODFS_CI=1`) rather than
    /// skipping it.
    public static let failsWhenMissing: Bool = ProcessInfo.processInfo.environment["PODFS_CI"] == "1"

    /// Root and `/dev/fuse`: `nil` when both are there, else what is
    /// missing.
    public static let root: String? = {
        if getuid() != 0 { return "mounts for real: needs root and /dev/fuse (run scripts/test as root)" }
        if !FileManager.default.fileExists(atPath: "/dev/fuse") {
            return "mounts for real: /dev/fuse is missing (load the fuse module: modprobe fuse)"
        }
        return nil
    }()

    // MARK: - Methods

    /// The programs of `tools` that are not on `PATH`, as a message naming
    /// them; `nil` when every one is there.
    public static func programs(_ tools: [String], for purpose: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let absent = tools.filter { tool in
            !path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
        }
        guard !absent.isEmpty else { return nil }
        return "\(purpose): \(absent.joined(separator: ", ")) not installed (scripts/setup installs them)"
    }

    /// Whether a test that needs what `missing` names may run: `true` when
    /// nothing is missing, `false` (skip) when something is, and a thrown
    /// `Missing` (a failure) when something is and `PODFS_CI=1`.
    static func met(_ missing: String?) throws -> Bool {
        guard let missing else { return true }
        if failsWhenMissing { throw Missing(description: "PODFS_CI=1 and a test cannot run: \(missing)") }
        return false
    }
}

extension Requirement {
    /// A need that is not met while `PODFS_CI=1` is set.
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test when `missing` is `nil`; otherwise skips it with
    /// `missing` as the reason, or fails it with that reason when
    /// `PODFS_CI=1` (`Requirement`).
    public static func needs(_ missing: String?, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(
            if: try Requirement.met(missing), Comment(rawValue: missing ?? "nothing is missing"),
            sourceLocation: sourceLocation)
    }

    /// For suites that mount, trace or change the system: root and
    /// `/dev/fuse`.
    public static var needsRoot: Self { .needs(Requirement.root) }
}
