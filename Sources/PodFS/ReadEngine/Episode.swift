import RangeCache
import Locking
import FUSEBridge

/// One episode file: what the catalogue knows of it (immutable) and what the
/// reader knows of its bytes (behind one lock).
///
/// The reader's state (`Episode.State`, in `ReadRules/`) changes only through
/// its events, under `state`'s lock.
public final class Episode: Sendable {
    // MARK: - Nested types

    /// The show folder that lists an episode and the URL of its feed: one
    /// object a show, shared by its files. Every URL of an episode is
    /// fetched under the address zone of the feed that listed it
    /// (`ListedBy`), so the feed's URL travels with the episode instead of
    /// a mount-wide map from every episode URL to its feed.
    public final class Folder: Sendable {
        public let inode: UInt64
        public let feedURL: String

        public init(inode: UInt64, feedURL: String) {
            self.inode = inode
            self.feedURL = feedURL
        }
    }

    // MARK: - Properties

    public let inode: UInt64
    /// The show folder that lists it.
    public let folder: Folder
    public let key: String
    public let url: String
    public let guid: String?
    public let name: String
    public let modificationTime: Int64
    /// The enclosure length the feed claimed (`nil` when missing or 0).
    public let feedLength: Int64?
    /// An episode's audio, not a show's cover, transcript or chapters.
    public let isEpisode: Bool
    let state: StateCell
    /// The fetches of this episode on the network, by id, so one that
    /// yielded to a reader's jump can be stopped at once (docs/DESIGN.md,
    /// "Join or jump"). A leaf lock: never taken with `state` held.
    var transfers: Locked<[UInt64: Fetch]> { state.transfers }

    // MARK: - Init

    init(
        inode: UInt64, folder: Folder, key: String, url: String, guid: String?, name: String,
        modificationTime: Int64, feedLength: Int64?, isEpisode: Bool = true, record: EpisodeRecord?
    ) {
        self.inode = inode
        self.folder = folder
        self.key = key
        self.url = url
        self.guid = guid
        self.name = name
        self.modificationTime = modificationTime
        self.feedLength = feedLength
        self.isEpisode = isEpisode
        self.state = StateCell(record.flatMap { $0.holdsState ? State(restoring: $0) : nil })
    }

    /// The same file (inode, key, name, read state) with what its feed
    /// says of it now: a refresh found another enclosure URL, date or
    /// length for it (`Catalog.Renewal`).
    private init(renewing episode: Episode, url: String, modificationTime: Int64, feedLength: Int64?) {
        self.inode = episode.inode
        self.folder = episode.folder
        self.key = episode.key
        self.url = url
        self.guid = episode.guid
        self.name = episode.name
        self.modificationTime = modificationTime
        self.feedLength = feedLength
        self.isEpisode = episode.isEpisode
        self.state = episode.state
    }

    /// An episode of a folder of its own, listed by no feed (tests).
    convenience init(
        inode: UInt64, parent: UInt64, key: String, url: String, guid: String?, name: String,
        modificationTime: Int64, feedLength: Int64?, isEpisode: Bool = true, record: EpisodeRecord?
    ) {
        self.init(
            inode: inode, folder: Folder(inode: parent, feedURL: ""), key: key, url: url, guid: guid, name: name,
            modificationTime: modificationTime, feedLength: feedLength, isEpisode: isEpisode, record: record)
    }

    // MARK: - Methods

    /// This file as its feed now lists it, sharing its read state; `self`
    /// when nothing changed.
    func renewed(url: String, modificationTime: Int64, feedLength: Int64?) -> Episode {
        guard url != self.url || modificationTime != self.modificationTime || feedLength != self.feedLength else {
            return self
        }
        return Episode(renewing: self, url: url, modificationTime: modificationTime, feedLength: feedLength)
    }

    /// A program has it open or is opening it (`State.openByAReader`).
    var isOpenByAReader: Bool {
        state.ifMade { $0.openByAReader } ?? false
    }

    /// The inode of the show folder that lists it.
    public var parent: UInt64 { folder.inode }

    /// Who listed the URL it is fetched from (`RangeSource`).
    var listedBy: ListedBy { ListedBy(url: url, feedURL: folder.feedURL) }

    /// The size `stat` shows: the origin's length once known, else the feed's.
    var size: Int64 {
        state.ifMade({ $0.length }).flatMap { $0 } ?? feedLength ?? 0
    }

    /// Bytes of this episode on disk now.
    public var cachedBytes: Int64 {
        state.ifMade { $0.present.count } ?? 0
    }

    /// What `user.podfs.variant` says (docs/DESIGN.md, "Episodes and their
    /// variants"): "stitched per request (why), streamed whole", "final",
    /// "pinned", comma separated, or "one variant" when nothing applies.
    public var variantSummary: String {
        let (unstable, complete, pinned) =
            state.ifMade { state in (state.unstable, state.isComplete, state.effectiveURL.map { $0 != url } ?? false) }
            ?? (nil, false, false)
        var marks: [String] = []
        if let unstable { marks.append("stitched per request (\(unstable))") }
        if unstable != nil, !complete { marks.append("streamed whole") }
        if complete { marks.append("final") }
        if pinned { marks.append("pinned") }
        return marks.isEmpty ? "one variant" : marks.joined(separator: ", ")
    }

    var attributes: Attributes {
        attributes(size: size)
    }

    /// The attributes for the kernel and how long it may keep them: the
    /// origin's size for `timeout`; the feed's claim for `timeout` too until
    /// the episode is opened (nothing can contradict it before), then for 0 s.
    func attributes(timeout: Double) -> (Attributes, Double) {
        let now = monotonicSeconds()
        let (size, kept) = state.sizeShown(feedLength: feedLength, timeout: timeout, now: now)
        return (attributes(size: size), kept)
    }

    private func attributes(size: Int64) -> Attributes {
        Attributes(
            inode: inode, kind: .regularFile, permissions: 0o444, size: size,
            modificationTime: modificationTime)
    }
}
