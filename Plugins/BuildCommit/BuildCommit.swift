import Foundation
import PackagePlugin

/// Writes `BuildCommit.swift`, the commit the target is built from, before
/// every build, so `podfs --version` can say it without a manual step.
///
/// The file is rewritten only when its text changes, so a build with nothing
/// new compiles nothing. Outside a git checkout (a source tarball) the commit
/// is `nil` and `--version` says "unknown commit" rather than guess; a tree
/// with changes to tracked files is marked `-dirty`.
@main
struct BuildCommit: BuildToolPlugin {
    // MARK: - Properties

    /// Writes into `$2` the Swift source naming the commit of the checkout in
    /// `$1`, unless it already says that (git may be absent).
    private static let script = #"""
        dir=$1 out=$2
        commit=$(git -C "$dir" rev-parse --short=7 HEAD 2>/dev/null) || commit=""
        if [ -n "$commit" ] && ! git --no-optional-locks -C "$dir" diff --quiet HEAD -- 2>/dev/null; then
          commit="$commit-dirty"
        fi
        if [ -n "$commit" ]; then value="\"$commit\""; else value=nil; fi
        text="// Written by the BuildCommit plugin before each build; not in git.
        let podfsBuildCommit: String? = $value"
        [ "$(cat "$out" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" > "$out"
        """#

    // MARK: - Methods

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        return [
            .prebuildCommand(
                displayName: "Reading the commit podfs is built from",
                executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", Self.script, "sh", context.package.directoryURL.path(), output.path()],
                outputFilesDirectory: context.pluginWorkDirectoryURL)
        ]
    }
}
