import RangeCache

/// The cache's own downloads (docs/DESIGN.md, "Offline by policy"): a kept
/// or pinned episode is completed by fills, one fetch at a time, each from
/// the first byte neither here nor on its way to the next byte that is. A
/// fill is an ordinary fetch of the version the keeper's open file reads:
/// readers join it, its bytes are written and committed as any other's,
/// and the keeper stops it by closing its file (`stopUnreadStreams`).
extension EpisodeRules.State {
    // MARK: - Nested types

    /// What the keeper sees of an episode it completes.
    public struct FillProgress: Equatable, Sendable {
        /// Bytes of the current version on disk.
        public internal(set) var present: Int64
        /// The origin's length, once known.
        public internal(set) var length: Int64?
        /// A fetch of the current version is still on its way.
        public internal(set) var fetching: Bool
        /// Every byte of the current version is on disk.
        public internal(set) var holdsAll: Bool
        /// Its host stitches per request or proves nothing: its one stream
        /// is its variant, and a stream stopped for a reader would start
        /// again from byte 0 (`streamingWhole`), so it is not stopped.
        public internal(set) var streamsWhole: Bool
        /// Files the kernel has open on it (a reader's; not the cache's own,
        /// the keeper's and a scan's fetch ahead).
        public internal(set) var openFiles: Int = 0
        /// The origin answered a request for a range with the whole
        /// episode.
        public internal(set) var ignoresRange = false
    }

    // MARK: - Events

    /// The next fill for the keeper's open file `handle`: `nil` while a
    /// fetch of this version is on its way (it fills one gap at a time, so
    /// it never shares the link with itself), when every byte is here or on
    /// its way, or when the file reads a replaced version. Its fetch keeps
    /// variants apart (`guardingVariants`): an unstable episode's is its
    /// stream.
    public mutating func fill(handle: UInt64, tuning: ReadTuning) -> [Effect] {
        guard let reader = handles[handle], !isProvisional(handle), reader.generation == generation, let length
        else { return [] }
        guard !fetches.values.contains(where: { $0.generation == generation && $0.cursor < $0.upper }) else {
            return []
        }
        guard let gap = uncoveredGaps(in: 0..<length).first else { return [] }
        return guardingVariants([planFetch(from: gap, window: Int64(gap.count), length: length, tuning: tuning)])
    }

    /// The fills that bring `ranges` (clamped to the episode) for the open
    /// file `handle` of a scan's fetch ahead (`ScanAhead`): a fetch for
    /// each gap neither here nor on its way, none past its range's end.
    /// Empty when everything is here or on its way, the file reads a
    /// replaced version, or the host stitches per request or proves
    /// nothing: its one stream from byte 0 is the episode's variant
    /// (`streamingWhole`), and a head and a tail of their own would be a
    /// stream of the whole file.
    public mutating func fill(handle: UInt64, within ranges: [Range<Int64>], tuning: ReadTuning) -> [Effect] {
        guard let reader = handles[handle], !isProvisional(handle), reader.generation == generation, let length,
            unstable == nil
        else { return [] }
        var effects: [Effect] = []
        for range in ranges {
            let clamped = max(0, range.lowerBound)..<min(length, max(range.lowerBound, range.upperBound))
            guard !clamped.isEmpty else { continue }
            for gap in uncoveredGaps(in: clamped) {
                effects.append(planFetch(from: gap, window: Int64(gap.count), length: clamped.upperBound, tuning: tuning))
            }
        }
        return guardingVariants(effects)
    }

    /// The keeper gives way to a reader of another episode: its fills
    /// `ids` end where their bytes have come, whoever has the file open
    /// (a player paused on it reads nothing now). Not while a read of this
    /// version waits: it may wait for those bytes, and it is a reader's
    /// fetch now. Returns the fills whose transfers stop.
    public mutating func stopFills(_ ids: Set<UInt64>) -> [UInt64] {
        guard openWaiters.isEmpty, earlyReads.isEmpty, !waiters.contains(where: { $0.generation == generation })
        else { return [] }
        var stopped: [UInt64] = []
        for id in ids {
            guard var progress = fetches[id], progress.generation == generation, progress.received < progress.upper
            else { continue }
            progress.cut(at: max(progress.cursor, progress.received))
            fetches[id] = progress
            stopped.append(id)
        }
        return stopped
    }

    /// Whether the open file `handle` reads the current version (a head
    /// may have replaced it since: the keeper opens it again).
    public func readsCurrentVersion(_ handle: UInt64) -> Bool {
        handles[handle].map { !isProvisional(handle) && $0.generation == generation } ?? false
    }

    /// How far the current version is.
    public var fillProgress: FillProgress {
        let fetching = fetches.values.contains { $0.generation == generation && $0.cursor < $0.upper }
        return FillProgress(
            present: present.count, length: length, fetching: fetching,
            holdsAll: length.map { present.contains(0..<$0) } ?? false, streamsWhole: unstable != nil,
            openFiles: handles.values.filter { $0.opener == .kernel }.count,
            ignoresRange: warned.contains(.ignoresRange))
    }
}
