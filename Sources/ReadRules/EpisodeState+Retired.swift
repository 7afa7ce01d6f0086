import RangeCache

extension EpisodeRules {
    /// What a replaced version left for the files opened on it: the bytes
    /// that were cached when it was replaced, in its own file, which no
    /// longer has a path (docs/DESIGN.md, "Files open on a replaced
    /// version").
    public struct RetiredVersion: Sendable {
        var length: Int64
        var present: RangeSet
        var spill: SpillBuffer
        /// Detached from its path by `Effect.replace`; closed when the
        /// last file opened on the version is released.
        public internal(set) var scratch: EpisodeRules.FileToken?
    }
}

/// Files open on a replaced version (docs/DESIGN.md, "Files open on a
/// replaced version"): when the origin's bytes change (a publisher's new
/// version, a variant whose link is gone, an overlap that did not match),
/// a file opened before keeps reading what was cached of the version it
/// opened, and gets EIO only for bytes that version never had. Serving
/// the new version's bytes to it would mix two versions; failing reads of
/// bytes that are still on disk would stop a player for nothing.
extension EpisodeRules.State {
    // MARK: - Events

    /// A read by a file opened on the replaced version `reader`: served
    /// from what that version had, or EIO. Not once a file of a newer
    /// version is open: the kernel's page cache is the episode's, and old
    /// bytes read into it could be seen by the newer file.
    mutating func readRetired(
        _ reader: EpisodeRules.HandleState, offset: Int64, size: Int, reply: EpisodeRules.ReadToken
    ) -> [Effect] {
        guard let old = retired[reader.generation], !newerFileOpen(than: reader.generation) else { return [.fail(reply)] }
        let end = ReadPlan.end(offset: offset, size: size, length: old.length)
        if offset >= end { return [.answerEmpty(reply)] }
        let wanted = offset..<end
        var had = old.present
        for range in old.spill.ranges.ranges { had.insert(range) }
        guard had.contains(wanted) else { return [.fail(reply)] }
        // These bytes reach the kernel's page cache: the next open of the
        // current version must drop it (keep_cache off).
        kernelPagesStale = true
        return [.serveFile(reply, wanted, from: old.scratch, spilled: old.spill.pieces(overlapping: wanted))]
    }

    /// The driver made the new version's file (`Effect.replace`);
    /// `nil` when it could not: `scratchFile(of:)` then tries again.
    public mutating func replaced(with fresh: EpisodeRules.FileToken?) {
        if scratch == nil { storage = fresh.map(EpisodeRules.Scratch.open) ?? .notOpen }
    }

    /// The driver could not detach `old` from its path: the new version
    /// uses it after all, and the old version's bytes in it are not kept for it.
    /// Returns their extent, to be punched.
    public mutating func keptInPlace(_ old: EpisodeRules.FileToken) -> Int64 {
        if scratch == nil { storage = .open(old) }
        var extent: Int64 = 0
        for (generation, version) in retired where version.scratch == old {
            extent = max(extent, version.length)
            retired[generation] = nil
        }
        return extent
    }

    /// Forgets the replaced versions no open file reads any more. Returns
    /// them, so their files are closed outside the lock (closing a file
    /// with no path frees its blocks).
    mutating func forgetUnreadVersions() -> [EpisodeRules.RetiredVersion] {
        guard !retired.isEmpty else { return [] }
        let reading = Set(handles.values.map(\.generation))
        let unread = retired.keys.filter { !reading.contains($0) }
        return unread.compactMap { retired.removeValue(forKey: $0) }
    }

    // MARK: - Internal methods

    /// Before the version is replaced: keeps its cached bytes for the files
    /// opened on it, if any is open and any byte is cached. The scratch
    /// file goes with them, so the new version gets a new one.
    mutating func retireForOpenFiles() {
        let opened = handles.contains { $0.value.generation == generation && !isProvisional($0.key) }
        guard opened, let length, !present.isEmpty || !spill.isEmpty else { return }
        retired[generation] = EpisodeRules.RetiredVersion(length: length, present: present, spill: spill, scratch: scratch)
        if scratch != nil { storage = .replacing }
    }

    /// What frees the old version's bytes on disk once the index forgot
    /// them: a new file if they are retired for open files (`retired`), else a punched
    /// and resized one. Call after `dropVersion`.
    func freeingOldBytes(old: Int64?, new: Int64) -> Effect? {
        if replacingScratch, let file = retired[generation &- 1]?.scratch { return .replace(old: file, length: new) }
        guard let scratch, let old else { return nil }
        return .reshape(scratch, old: old, new: new)
    }

    // MARK: - Private methods

    private func newerFileOpen(than generation: UInt64) -> Bool {
        handles.values.contains { $0.generation > generation }
    }
}
