import Foundation
import PackagePlugin

/// Writes `BuildCommit.swift`, the commit the target is built from, so
/// `podfs --version` can say it without a manual step.
///
/// The command runs when the checkout's HEAD, its index or a source file
/// changes, and rewrites the file only when its text changes, so a build with
/// nothing new compiles nothing. Outside a git checkout (a source tarball)
/// the commit is `nil` and `--version` says "unknown commit" rather than
/// guess; a tree with changes to tracked files is marked `-dirty`.
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
        text="// Written by the BuildCommit plugin at build time; not in git.
        let podfsBuildCommit: String? = $value"
        [ "$(cat "$out" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" > "$out"
        """#

    // MARK: - Methods

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        let package = context.package.directoryURL
        // The command runs again whenever one of these changes: a commit,
        // checkout or reset moves HEAD and appends to its log; an edit to a
        // source file or the index may make the tree dirty or clean.
        let git = Self.gitDirectory(of: package)
        let gitFiles = ["HEAD", "logs/HEAD", "index"].compactMap { git?.appending(path: $0) }
        let sources = context.package.targets.compactMap { $0.sourceModule }.flatMap { $0.sourceFiles }
            .map(\.url)
        let inputs = (gitFiles + sources).filter { FileManager.default.fileExists(atPath: $0.path()) }
        return [
            .buildCommand(
                displayName: "Reading the commit podfs is built from",
                executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", Self.script, "sh", package.path(), output.path()],
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }

    // MARK: - Private methods

    /// The checkout's git directory: `.git`, or where a worktree's `.git`
    /// file points; `nil` outside a git checkout.
    private static func gitDirectory(of package: URL) -> URL? {
        let dotGit = package.appending(path: ".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path(), isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { return dotGit }
        guard let text = try? String(contentsOf: dotGit, encoding: .utf8), text.hasPrefix("gitdir: ") else {
            return nil
        }
        let path = text.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespacesAndNewlines)
        return path.hasPrefix("/") ? URL(filePath: path) : package.appending(path: path)
    }
}
