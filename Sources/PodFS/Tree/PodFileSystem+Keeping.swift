public import FUSEBridge
import Glibc

/// The keep settings as extended attributes (docs/DESIGN.md, "Offline by
/// policy"): `user.podfs.keep_latest` on a show folder, `user.podfs.pinned`
/// and `user.podfs.kept` on an episode. Any program may read them; only the
/// mount's owner may change them (EPERM for others, also with
/// `allow_other`), and a bad value is EINVAL with a log line that says
/// what was expected.
extension PodFileSystem {
    // MARK: - Names

    static let keepLatestName = "user.podfs.keep_latest"
    static let pinnedName = "user.podfs.pinned"
    static let keptName = "user.podfs.kept"

    // MARK: - FileSystem

    public func setxattr(inode: UInt64, name: String, value: [UInt8], caller: UInt32) throws(FileSystemError) {
        let target = try keepTarget(inode: inode, name: name, caller: caller)
        switch target {
        case .show(let show, let keeper):
            guard let n = KeepPlan.parseLatest(value) else {
                logger.warning(
                    "\(name) needs a whole number of episodes from 0 to \(KeepPlan.maximumLatest), e.g. setfattr -n \(name) -v 3",
                    metadata: ["show": "\(show.name)", "value": "\(String(decoding: value.prefix(40), as: UTF8.self))"])
                throw .invalidArgument
            }
            try keeper.setLatest(n, of: show)
        case .episode(let episode, let keeper):
            guard let pinned = KeepPlan.parsePinned(value) else {
                logger.warning(
                    "\(name) needs 1 to pin or 0 to unpin, e.g. setfattr -n \(name) -v 1",
                    metadata: ["episode": "\(episode.name)", "value": "\(String(decoding: value.prefix(40), as: UTF8.self))"])
                throw .invalidArgument
            }
            try keeper.setPinned(pinned, episode)
        }
    }

    public func removexattr(inode: UInt64, name: String, caller: UInt32) throws(FileSystemError) {
        switch try keepTarget(inode: inode, name: name, caller: caller) {
        case .show(let show, let keeper):
            guard keeper.latest(of: show).own else { throw .noAttribute }
            try keeper.setLatest(nil, of: show)
        case .episode(let episode, let keeper):
            guard keeper.isPinned(episode) else { throw .noAttribute }
            try keeper.setPinned(false, episode)
        }
    }

    public func access(inode: UInt64, mask: Int32) -> Int32 {
        if mask & W_OK != 0 { return EROFS }
        guard mask & X_OK != 0 else { return 0 }
        switch catalog.node(inode) {
        case .root, .show: return 0
        case .episode, .playlist: return EACCES
        case nil: return catalog.placeholderTime(inode: inode) != nil || inode == ControlFiles.directoryInode ? 0 : EACCES
        }
    }

    // MARK: - Internal methods

    /// The value of a keep attribute of `inode`; `nil` when `name` is not
    /// one (or the node has none, when it is not the node's).
    func keepingAttribute(inode: UInt64, name: String) throws(FileSystemError) -> [UInt8]? {
        guard let keeper, [Self.keepLatestName, Self.pinnedName, Self.keptName].contains(name) else { return nil }
        switch catalog.node(inode) {
        case .show(let show) where name == Self.keepLatestName:
            return Array(String(keeper.latest(of: show).n).utf8)
        case .episode(let episode) where episode.isEpisode && name == Self.pinnedName:
            guard keeper.isPinned(episode) else { throw .noAttribute }
            return Array("1".utf8)
        case .episode(let episode) where episode.isEpisode && name == Self.keptName:
            return Array(keeper.keptReason(episode).utf8)
        default:
            throw .noAttribute
        }
    }

    /// The keep attributes `listxattr` names for `inode`.
    func keepingAttributeNames(inode: UInt64) -> [String] {
        guard let keeper else { return [] }
        switch catalog.node(inode) {
        case .show: return [Self.keepLatestName]
        case .episode(let episode) where episode.isEpisode:
            return keeper.isPinned(episode) ? [Self.pinnedName, Self.keptName] : [Self.keptName]
        default: return []
        }
    }

    // MARK: - Private methods

    private enum KeepTarget {
        case show(Catalog.Show, Keeper)
        case episode(Episode, Keeper)
    }

    /// What a change of `name` on `inode` would change, once the caller
    /// may: the show's N or the episode's pin.
    private func keepTarget(inode: UInt64, name: String, caller: UInt32) throws(FileSystemError) -> KeepTarget {
        guard name.hasPrefix("user.") else { throw .notSupported }
        guard let keeper else { throw .readOnly }
        let target: KeepTarget
        switch catalog.node(inode) {
        case .show(let show) where name == Self.keepLatestName: target = .show(show, keeper)
        case .episode(let episode) where episode.isEpisode && name == Self.pinnedName: target = .episode(episode, keeper)
        case .episode(let episode) where episode.isEpisode && name == Self.keptName:
            logger.warning("\(name) is read only: it says why an episode is kept", metadata: ["episode": "\(episode.name)"])
            throw .notPermitted
        default:
            // No other attribute can be set: the file system is read-only.
            throw .readOnly
        }
        guard caller == owner else {
            keeper.logRefusal(name, caller: caller, owner: owner)
            throw .notPermitted
        }
        return target
    }
}
