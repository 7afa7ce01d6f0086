import RangeCache

/// Streams nobody reads (docs/DESIGN.md, "Who reads"): a scanner opens a
/// file, reads its tags and closes it; a listener keeps it open while it
/// plays. Fetches still on their way when the last open file closed stop
/// `Tuning.closeGrace` later, unless a file opened again meanwhile (a
/// player that closes and reopens): what they brought stays cached, and
/// nothing they gave up is fetched later.
extension EpisodeRules.State {
    // MARK: - Events

    /// Whether fetches of this version are still on their way and no file
    /// is open or opening: the driver asks `stopUnreadStreams` after the
    /// grace.
    public var streamsUnread: Bool {
        handles.isEmpty && openWaiters.isEmpty && fetches.contains { isUnreadStream($0.key, $0.value) }
    }

    /// The grace after `closing` (a value of `closings`) has passed: if no
    /// file was opened and closed since and none is open, every fetch of
    /// this version but a probe ends where its bytes have come
    /// (`cutShort`), and what earlier jumps deferred is forgotten. Returns
    /// the fetches whose transfers stop now.
    public mutating func stopUnreadStreams(afterClosing closing: UInt64) -> [UInt64] {
        guard closing == closings, handles.isEmpty, openWaiters.isEmpty, earlyReads.isEmpty,
            !waiters.contains(where: { $0.generation == generation })
        else { return [] }
        deferred = RangeSet()
        var stopped: [UInt64] = []
        for (id, var progress) in fetches where isUnreadStream(id, progress) {
            progress.cut(at: max(progress.cursor, progress.received))
            fetches[id] = progress
            stopped.append(id)
        }
        return stopped
    }

    // MARK: - Private methods

    /// A fetch of this version, not a probe, with bytes still to come.
    private func isUnreadStream(_ id: UInt64, _ progress: EpisodeRules.FetchProgress) -> Bool {
        id != probeID && progress.generation == generation && progress.received < progress.upper
    }
}
