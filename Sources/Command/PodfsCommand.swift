import ArgumentParser

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
}
