import RangeCache

/// The cache's own downloads (docs/DESIGN.md, "Offline by policy"): a kept
/// or pinned episode is completed by fills, one fetch at a time, each from
/// the first byte neither here nor on its way to the next byte that is. A
/// fill is an ordinary fetch of the version the keeper's open file reads:
/// readers join it, its bytes are written and committed as any other's,
/// and the keeper stops it by closing its file (`stopUnreadStreams`).
extension Episode.State {
    // MARK: - Nested types

    /// What the keeper sees of an episode it completes.
    struct FillProgress: Equatable {
        /// Bytes of the current version on disk.
        var present: Int64
        /// The origin's length, once known.
        var length: Int64?
        /// A fetch of the current version is still on its way.
        var fetching: Bool
        /// Every byte of the current version is on disk.
        var holdsAll: Bool
        /// Its host stitches per request or proves nothing: its one stream
        /// is its variant, and a stream stopped for a reader would start
        /// again from byte 0 (`streamingWhole`), so it is not stopped.
        var streamsWhole: Bool
    }

    // MARK: - Events

    /// The next fill for the keeper's open file `handle`: `nil` while a
    /// fetch of this version is on its way (it fills one gap at a time, so
    /// it never shares the link with itself), when every byte is here or on
    /// its way, or when the file reads a replaced version.
    mutating func fill(handle: UInt64, tuning: EpisodeReader.Tuning) -> ReadEffect? {
        guard let reader = handles[handle], !reader.provisional, reader.generation == generation, let length
        else { return nil }
        guard !fetches.values.contains(where: { $0.generation == generation && $0.cursor < $0.upper }) else {
            return nil
        }
        guard let gap = uncoveredGaps(in: 0..<length).first else { return nil }
        return planFetch(from: gap, window: Int64(gap.count), length: length, tuning: tuning)
    }

    /// How far the current version is.
    var fillProgress: FillProgress {
        let fetching = fetches.values.contains { $0.generation == generation && $0.cursor < $0.upper }
        return FillProgress(
            present: present.count, length: length, fetching: fetching,
            holdsAll: length.map { present.contains(0..<$0) } ?? false, streamsWhole: unstable != nil)
    }
}
