import Feeds
public import FUSEBridge
import Locking
public import Logging
import RangeCache
import Synchronization
import Glibc
import ReadRules

/// The `FileSystem` a mount serves: the catalogue's tree, episodes (and
/// covers, transcripts, chapters) read through the `EpisodeReader`,
/// playlists from memory.
public final class PodFileSystem: FileSystem {
    // MARK: - Properties

    /// Extended attribute names, a public interface (docs/DESIGN.md, "What a
    /// mount shows").
    public static let attributeNames = [
        "user.podfs.url", "user.podfs.guid", "user.podfs.cached_bytes", "user.podfs.variant",
    ]

    let catalog: Catalog
    private let reader: EpisodeReader
    let logger: Logger
    /// The hidden `.podfs` directory (`nil`: none).
    private let control: ControlFiles?
    /// What is kept offline by policy; its settings are extended
    /// attributes (`PodFileSystem+Keeping`).
    let keeper: Keeper?
    /// Fetches ahead of a library scan (`nil`: never).
    private let scanAhead: ScanAhead?
    /// Who may change the settings: the user the mount runs as.
    let owner: UInt32 = getuid()
    /// How long the kernel may cache names and confirmed attributes.
    private let cacheTimeout: Double = 30
    /// The playlist version each open playlist file reads (a refresh may
    /// make a new one meanwhile), by handle.
    private let openPlaylists = Locked<[UInt64: Playlist]>([:])
    /// Handles of open playlists (the reader numbers its own).
    private let nextPlaylistHandle = Atomic<UInt64>(1 << 62)

    // MARK: - Init

    public init(
        catalog: Catalog, reader: EpisodeReader, logger: Logger, control: ControlFiles? = nil, keeper: Keeper? = nil,
        scanAhead: ScanAhead? = nil
    ) {
        self.catalog = catalog
        self.reader = reader
        self.logger = logger
        self.control = control
        self.keeper = keeper
        self.scanAhead = scanAhead
    }

    // MARK: - FileSystem

    public func lookup(parent: UInt64, name: String, reply: EntryReply) {
        if let control, let attributes = control.lookup(parent: parent, name: name) {
            return reply.entry(attributes, entryTimeout: cacheTimeout, attributesTimeout: 0)
        }
        guard let node = catalog.lookup(parent: parent, name: name) else {
            reply.notFound(timeout: 1)
            return
        }
        let (attributes, timeout) = attributes(of: node)
        reply.entry(attributes, entryTimeout: cacheTimeout, attributesTimeout: timeout)
    }

    public func getattr(inode: UInt64, reply: AttributesReply) {
        if let control, let attributes = control.attributes(inode) { return reply.attributes(attributes, timeout: 0) }
        if let listed = placeholderAttributes(inode) { return reply.attributes(listed.0, timeout: listed.1) }
        guard let node = catalog.node(inode) else {
            reply.fail(.notFound)
            return
        }
        if case .episode(let episode) = node {
            // An episode opened before its first response shows the
            // origin's size once that arrives, not the feed's claim.
            return reader.whenSized(episode) { [self] in
                let (known, timeout) = self.attributes(of: node)
                reply.attributes(known, timeout: timeout)
            }
        }
        let (attributes, timeout) = attributes(of: node)
        reply.attributes(attributes, timeout: timeout)
    }

    public func readdir(inode: UInt64) throws(FileSystemError) -> [DirectoryEntry] {
        if let entries = control?.children(of: inode) { return entries }
        guard let entries = catalog.children(of: inode) else { throw .notDirectory }
        // Attributes come with each readdirplus page (`listedAttributes`),
        // as they are when the page is built.
        return entries.map { entry in
            var entry = entry
            entry.entryTimeout = cacheTimeout
            return entry
        }
    }

    public func listedAttributes(inode: UInt64) -> (Attributes, Double)? {
        if let control, control.owns(inode) { return nil }
        // A built node first (one lookup for each file of a show); a
        // listing never builds a show (`placeholderAttributes`).
        if let node = catalog.builtNode(inode) { return attributes(of: node) }
        return placeholderAttributes(inode)
    }

    public func open(inode: UInt64, flags: Int32, reply: OpenReply) {
        if let control, control.owns(inode) {
            do throws(FileSystemError) { reply.opened(try control.open(inode, flags: flags)) } catch { reply.fail(error) }
            return
        }
        switch catalog.node(inode) {
        case .episode(let episode):
            guard let scanAhead else { return reader.open(episode, reply: reply) }
            reader.open(episode, reply: ScanNotedOpen(reply: reply, episode: episode, scanAhead: scanAhead))
        case .playlist(var playlist):
            let handle = nextPlaylistHandle.add(1, ordering: .relaxed).newValue
            var options = OpenOptions(handle: handle)
            // `Latest.m3u` lists every show's newest episodes: shows listed
            // and not built whose part is not known (a cold mount's
            // arrivals) are built first. The kernel drops the size it was
            // told before (by this build, or by one in the background whose
            // word to the kernel may come after the first read).
            if inode == Catalog.latestPlaylistInode {
                if catalog.buildShowsForLatest() { playlist = catalog.latestPlaylist }
                options.dropAttributes = true
            }
            openPlaylists.withLock { $0[handle] = playlist }
            reply.opened(options)
        case .root, .show: reply.fail(.isDirectory)
        case nil: reply.fail(.notFound)
        }
    }

    public func read(inode: UInt64, handle: UInt64, offset: Int64, size: Int, reply: DataReply) {
        if let control, control.owns(inode) { return control.read(handle: handle, offset: offset, size: size, reply: reply) }
        switch catalog.node(inode) {
        case .episode(let episode):
            reader.read(episode, handle: handle, offset: offset, size: size, reply: reply)
        case .playlist:
            guard let playlist = openPlaylists.withLock({ $0[handle] }) else {
                reply.fail(.ioError)
                return
            }
            let content = playlist.content
            let lower = Int(min(max(offset, 0), Int64(content.count)))
            let upper = min(content.count, lower + max(size, 0))
            content[lower..<upper].withUnsafeBytes { reply.data($0) }
        case .root, .show, nil:
            reply.fail(.ioError)
        }
    }

    public func release(inode: UInt64, handle: UInt64) {
        if let control, control.owns(inode) { return control.release(handle: handle) }
        switch catalog.node(inode) {
        case .episode(let episode):
            let extent = reader.release(episode, handle: handle)
            if let extent { scanAhead?.released(handle: handle, extent: extent) }
        case .playlist: openPlaylists.withLock { _ = $0.removeValue(forKey: handle) }
        case .root, .show, nil: break
        }
    }

    public func getxattr(inode: UInt64, name: String) throws(FileSystemError) -> [UInt8] {
        // podfs has no security labels and no ACLs. Saying so (ENOTSUP, not
        // ENODATA) lets `ls -l` stop asking for them after the first file:
        // GNU ls remembers a file system that does not support them, which
        // saves two round trips per file of a listing.
        guard name.hasPrefix("user.") else { throw .notSupported }
        if let value = try keepingAttribute(inode: inode, name: name) { return value }
        guard case .episode(let episode) = catalog.node(inode) else { throw .noAttribute }
        switch name {
        // Any program may read it: the URL without its secrets.
        case "user.podfs.url": return Array(FeedURL.redacted(episode.url).utf8)
        case "user.podfs.guid":
            guard let guid = episode.guid else { throw .noAttribute }
            return Array(guid.utf8)
        case "user.podfs.cached_bytes": return Array(String(episode.cachedBytes).utf8)
        case "user.podfs.variant": return Array(episode.variantSummary.utf8)
        default: throw .noAttribute
        }
    }

    public func listxattr(inode: UInt64) throws(FileSystemError) -> [String] {
        let keeping = keepingAttributeNames(inode: inode)
        guard case .episode(let episode) = catalog.node(inode) else { return keeping }
        return Self.attributeNames.filter { $0 != "user.podfs.guid" || episode.guid != nil } + keeping
    }

    public func statfs() -> FileSystemStatistics {
        let shows = catalog.shows
        // Sizes are bounded where they enter, but a sum over every file of
        // every show is held at the top rather than trusted not to trap.
        let latest = Int64(catalog.latestPlaylist.content.count)
        let total = shows.reduce(latest) { sum, show in
            (show.episodes + show.extras).reduce(sum) { $0.saturatingAdding($1.size) }
                .saturatingAdding(Int64(show.playlist.content.count))
        }
        let files = shows.reduce(1) { $0 + $1.episodes.count + $1.extras.count + 1 }
        return FileSystemStatistics(
            blockSize: 4096, totalBlocks: UInt64(total / 4096 + (total % 4096 == 0 ? 0 : 1)), freeBlocks: 0,
            files: UInt64(files))
    }

    // MARK: - Private methods

    /// A show folder listed from the last mount and not built yet: its
    /// attributes need no building (`Catalog+Placeholders`).
    private func placeholderAttributes(_ inode: UInt64) -> (Attributes, Double)? {
        guard let time = catalog.placeholderTime(inode: inode) else { return nil }
        let attributes = Attributes(
            inode: inode, kind: .directory, permissions: 0o555, size: 0, modificationTime: time, linkCount: 2)
        return (attributes, cacheTimeout)
    }

    /// Attributes and how long the kernel may keep them. An episode's size
    /// is the feed's claim until an open or a check asks the origin: once
    /// opened, the claim is asked again each time (`Episode.attributes(timeout:)`).
    private func attributes(of node: Catalog.Node) -> (Attributes, Double) {
        switch node {
        case .root:
            let attributes = Attributes(
                inode: Catalog.rootInode, kind: .directory, permissions: 0o555, size: 0,
                modificationTime: catalog.rootModificationTime,
                linkCount: UInt32(2 + catalog.showFolderCount))
            return (attributes, cacheTimeout)
        case .show(let show):
            let attributes = Attributes(
                inode: show.inode, kind: .directory, permissions: 0o555, size: 0,
                modificationTime: show.modificationTime, linkCount: 2)
            return (attributes, cacheTimeout)
        case .episode(let episode):
            return episode.attributes(timeout: cacheTimeout)
        case .playlist(let playlist):
            // A refresh that changes it invalidates the kernel's copy.
            return (playlist.attributes, cacheTimeout)
        }
    }
}

/// An episode's open that tells the scan-ahead its handle before the
/// kernel hears of it (so it sees every read of the file).
private final class ScanNotedOpen: OpenReplying {
    let reply: OpenReply
    let episode: Episode
    let scanAhead: ScanAhead

    init(reply: OpenReply, episode: Episode, scanAhead: ScanAhead) {
        self.reply = reply
        self.episode = episode
        self.scanAhead = scanAhead
    }

    func opened(_ options: OpenOptions) {
        scanAhead.opened(episode, handle: options.handle)
        reply.opened(options)
    }

    func fail(_ error: FileSystemError) {
        reply.fail(error)
    }
}
