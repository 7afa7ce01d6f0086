public import RangeCache
import ReadRules

/// Which files a mount keeps complete offline, and why (docs/DESIGN.md,
/// "Offline by policy"): the newest N episodes of each show (the mount's N,
/// or the show's own), every pinned episode, and every show's cover up to
/// `largestCover`. A plain value made from the catalogue and the settings;
/// the keeper downloads in its `order`, and eviction spares its `kept`.
///
/// Kept episodes count in the cache's cap. When they alone would pass it,
/// pins come first, then the newest that fit; the rest are `unfit`, said
/// in the status and the log, and are ordinary cache.
public struct KeepPlan: Sendable, Equatable {
    // MARK: - Nested types

    /// Why a file is kept (`user.podfs.kept` of an episode).
    public enum Reason: String, Sendable {
        case latest
        case pinned
        /// A show's cover, whatever the settings: a file the feed gives no
        /// size for, kept so `ls -l` shows its real size and the show has
        /// its art offline.
        case cover
    }

    /// An episode as the plan sees it.
    public struct Candidate: Sendable, Equatable {
        public var key: String
        /// Publication time (seconds since the epoch), as the listing sorts.
        public var date: Int64
        /// Its size as known: the origin's once asked, else the feed's.
        public var size: Int64

        public init(key: String, date: Int64, size: Int64) {
            self.key = key
            self.date = date
            self.size = size
        }
    }

    /// A show: its identity (`CacheScope.keyScope`), episodes in listing
    /// order, and its cover if the feed names one.
    public struct Show: Sendable, Equatable {
        public var identity: String
        public var episodes: [Candidate]
        public var cover: Candidate?

        public init(identity: String, episodes: [Candidate], cover: Candidate? = nil) {
            self.identity = identity
            self.episodes = episodes
            self.cover = cover
        }
    }

    // MARK: - Properties

    /// The episodes kept, by key, with why. A pinned episode among a
    /// show's newest says `pinned`.
    public private(set) var kept: [String: Reason] = [:]
    /// Episodes that would be kept but do not fit the cap, most wanted
    /// first.
    public private(set) var unfit: [String] = []
    /// The order to complete them in: pins, then newest first, then the
    /// covers in the shows' order.
    public private(set) var order: [String] = []
    /// Each show's N as it applies (its own, else the mount's), by identity.
    public private(set) var latest: [String: Int] = [:]
    /// The bytes the kept episodes take when complete.
    public private(set) var keptBytes: Int64 = 0
    /// Whether any episode is kept, not only covers: a thousand shows
    /// keeping none need not be walked episode by episode.
    public private(set) var keepsEpisodes = false

    // MARK: - Init

    /// - Parameters:
    ///   - mountLatest: the mount's N (`-o keep_latest`), 0 for none.
    ///   - cap: the cache's cap in bytes, `nil` for none.
    public init(shows: [Show], mountLatest: Int, settings: KeepSettings, cap: Int64?) {
        var wanted: [(candidate: Candidate, reason: Reason)] = []
        var seen = Set<String>()
        for show in shows {
            if let cover = show.cover, cover.size <= Self.largestCover, seen.insert(cover.key).inserted {
                wanted.append((cover, .cover))
            }
            let n = max(0, settings.showLatest[show.identity] ?? mountLatest)
            latest[show.identity] = n
            // Newest first; the listing's order breaks a tie.
            let newest = show.episodes.enumerated()
                .sorted { ($0.element.date, -$0.offset) > ($1.element.date, -$1.offset) }
                .map(\.element)
            for (rank, candidate) in newest.enumerated() where !seen.contains(candidate.key) {
                let pinned = settings.pinned.contains(candidate.key)
                guard pinned || rank < n else { continue }
                seen.insert(candidate.key)
                wanted.append((candidate, pinned ? .pinned : .latest))
            }
        }
        // Pins first, then the newest, then the covers in the shows' order;
        // stable for equal dates. Covers come last in the cap too: one
        // never takes an episode's room, and a cover whose host does not
        // answer never holds up an episode's download.
        let group: (Reason) -> Int = { reason in
            switch reason {
            case .pinned: 0
            case .latest: 1
            case .cover: 2
            }
        }
        let ranked = wanted.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            if group(x.reason) != group(y.reason) { return group(x.reason) < group(y.reason) }
            if x.reason != .cover, x.candidate.date != y.candidate.date { return x.candidate.date > y.candidate.date }
            return a.offset < b.offset
        }.map(\.element)
        for (candidate, reason) in ranked {
            let size = max(0, candidate.size)
            if let cap, keptBytes.saturatingAdding(size) > cap {
                unfit.append(candidate.key)
                continue
            }
            keptBytes = keptBytes.saturatingAdding(size)
            kept[candidate.key] = reason
            order.append(candidate.key)
            if reason != .cover { keepsEpisodes = true }
        }
    }

    // MARK: - Methods

    /// Whether pinning an episode of `size` bytes fits beside the pins
    /// already made (`pinnedBytes`), within `cap`: a pin that cannot fit
    /// is refused (ENOSPC) rather than silently not kept.
    public static func pinFits(size: Int64, pinnedBytes: Int64, cap: Int64?) -> Bool {
        guard let cap else { return true }
        return pinnedBytes.saturatingAdding(max(0, size)) <= cap
    }

    /// The value of `user.podfs.keep_latest` read back: a whole number
    /// from 0 to `maximumLatest`, in decimal, with no sign or space (a
    /// trailing newline, as `echo` writes, is allowed). `nil` otherwise.
    public static func parseLatest(_ bytes: [UInt8]) -> Int? {
        var digits = bytes
        if digits.last == 0x0A { digits.removeLast() }
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = Int(String(decoding: digits, as: UTF8.self)), value <= maximumLatest
        else { return nil }
        return value
    }

    /// The value of `user.podfs.pinned`: "1" pins, "0" unpins (as
    /// `setfattr -x` does). `nil` for anything else.
    public static func parsePinned(_ bytes: [UInt8]) -> Bool? {
        var value = bytes
        if value.last == 0x0A { value.removeLast() }
        switch value {
        case [0x31]: return true
        case [0x30]: return false
        default: return nil
        }
    }

    /// The largest N a show or mount may ask for.
    public static let maximumLatest = 10_000

    /// The largest cover kept (bytes): artwork of 3000 x 3000 pixels
    /// takes a few MB at most; a feed whose image names something larger
    /// (a video, by mistake or not) has it read only when opened.
    public static let largestCover: Int64 = 16 * 1024 * 1024
}

extension KeepPlan {
    /// What the last mount kept (`lastKept`: its report's keys and the
    /// pins) that this mount still spares beside its plan: while listed
    /// shows are left to build, the keys no built show has a file of.
    /// Their plan comes when their show is built; a file of a built show
    /// is the plan's to keep or not. A file that left its feed stays kept
    /// until every show is built, then the plan alone decides (it, and a
    /// feed no longer mounted, are ordinary cache again).
    ///
    /// The keys are struck off as the built shows' files are met, rather
    /// than every built file's key gathered into a set at each plan while
    /// a thousand shows are built; with nothing kept last time (the
    /// default) there is nothing to do.
    static func stillSpared<Shows: Sequence, Keys: Sequence<String>>(
        lastKept: Set<String>, showsLeftToBuild: Bool, builtShows: Shows, keysOf keys: (Shows.Element) -> Keys
    ) -> Set<String> {
        guard showsLeftToBuild, !lastKept.isEmpty else { return [] }
        var unplanned = lastKept
        for show in builtShows where !unplanned.isEmpty {
            for key in keys(show) { unplanned.remove(key) }
        }
        return unplanned
    }
}
