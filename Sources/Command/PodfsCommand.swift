import ArgumentParser
import Foundation

/// `podfs`: mount podcast feeds as folders of episode files.
@main
struct PodfsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "podfs",
        abstract: "Mount podcast feeds as folders of episode files, read through a persistent cache.",
        discussion: """
            Each feed becomes a folder; each episode a read-only file with its real size and \
            its publication date as modification time. Bytes are fetched with HTTP Range \
            requests the first time they are read and served from the cache after that, \
            also after a remount and with no network.
            """,
        version: PodfsVersion.description,
        subcommands: [
            Mount.self, Unmount.self, Status.self, Subscribe.self, Unsubscribe.self, Subscriptions.self, Search.self,
            Prefetch.self, CacheCommand.self,
        ],
        defaultSubcommand: Mount.self)

    /// `podfs stauts`: a mistyped command is named as such (exit 64), not
    /// read as a mount point or a SOURCE, nor failed on its options as a
    /// mount's (`CommandTypo.hint`).
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let hint = CommandTypo.hint(arguments: arguments, exists: { FileManager.default.fileExists(atPath: $0) }) {
            Console.error(hint)
            Self.exit(withError: ExitCode.validationFailure)
        }
        Self.main(nil)
    }
}
