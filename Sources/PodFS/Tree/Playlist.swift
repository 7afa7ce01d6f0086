import FUSEBridge

/// A show's `<Show>.m3u`, made in memory from the listing it belongs to.
///
/// Immutable: a refresh that changes the listing makes a new playlist with
/// the same inode, and files opened before read the version they opened.
public final class Playlist: Sendable {
    // MARK: - Properties

    public let inode: UInt64
    public let name: String
    public let content: [UInt8]
    public let modificationTime: Int64

    // MARK: - Init

    init(inode: UInt64, name: String, content: [UInt8], modificationTime: Int64) {
        self.inode = inode
        self.name = name
        self.content = content
        self.modificationTime = modificationTime
    }

    // MARK: - Methods

    var attributes: Attributes {
        Attributes(
            inode: inode, kind: .regularFile, permissions: 0o444, size: Int64(content.count),
            modificationTime: modificationTime)
    }
}
