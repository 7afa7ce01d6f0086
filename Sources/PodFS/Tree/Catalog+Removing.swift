import FUSEBridge
import Foundation
import ReadRules

/// Shows taken out of the tree: an unsubscribed feed's folder leaves the
/// root at once, but every node it served stays in `nodes`, so a file open
/// in it (and a shell whose directory it is) reads on to its end.
extension Catalog {
    // MARK: - Nested types

    /// What leaving the root took, for the kernel's caches and the caller.
    public struct Removal: Sendable {
        /// The folder's name in the root.
        public var name: String
        /// The show that was built (`nil`: only its placeholder was listed).
        public var show: Show?
    }

    // MARK: - Methods

    /// Takes the folder of the feed at `url` out of the root (a built show
    /// or its placeholder); `nil` when the root has none. The files' keys
    /// stay, so a later subscription to the same feed finds its bytes.
    @discardableResult
    public func remove(url: String) -> Removal? {
        updating.withLock { _ in
            tree.withLock { tree -> Removal? in
                tree.removed.insert(url)
                // The root's time first: the playlist of the newest, made
                // again when `shows` changes, takes it when it is empty.
                let previousTime = tree.rootChangedAt
                tree.rootChangedAt = max(Catalog.wallClock(), tree.rootChangedAt.saturatingAdding(1))
                var removal: Removal?
                if let listed = tree.showsByURL[url], let position = tree.shows.firstIndex(where: { $0 === listed }) {
                    let show = tree.shows.remove(at: position)
                    if tree.showsByName[show.name] === show { tree.showsByName[show.name] = nil }
                    tree.showsByURL[url] = nil
                    removal = Removal(name: show.name, show: show)
                }
                if let placeholder = tree.removePlaceholder(url: url) {
                    removal = removal ?? Removal(name: placeholder.name, show: nil)
                }
                guard let removal else {
                    tree.rootChangedAt = previousTime
                    return nil
                }
                tree.rootOrder.removeAll { $0 == url }
                // Its podcast:guid may be claimed again by a later
                // subscription.
                tree.guidClaims = tree.guidClaims.filter { $0.value != url }
                return removal
            }
        }
    }

    /// The feed URL of each folder in the root by its name, built or
    /// listed from the last mount.
    public func feedURLsByShowName() -> [String: String] {
        tree.withLock { tree in
            var urls = tree.placeholdersByName.mapValues(\.url)
            for (name, show) in tree.showsByName { urls[name] = show.feedURL }
            return urls
        }
    }
}
