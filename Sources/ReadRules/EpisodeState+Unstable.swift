
/// Origins that serve different bytes per request (docs/DESIGN.md,
/// "Episodes and their variants"): hosts that stitch ads into each
/// response. Continuity is checked, not assumed: a response that shows the
/// origin is such a host marks the episode unstable, and the mark is kept
/// in the index.
extension EpisodeRules.State {
    // MARK: - Static methods

    /// Why a response head shows an origin that serves different bytes per
    /// request, or `nil`:
    /// - the length or the validator changed from the one a response in
    ///   this mount already confirmed (a change between mounts is a
    ///   publisher's new version, not a sign of stitching);
    /// - an ETag a response of this mount confirmed is missing from the
    ///   next (`validatorVanished`);
    /// - a range was asked and the whole body came (200) with the same
    ///   validator: an `If-Range` the origin does not honour, or no ranges.
    static func unstableReason(
        was old: OriginVersion, now new: OriginVersion, confirmedInThisMount: Bool, status: Int, askedRange: Bool
    ) -> StitchReason? {
        if confirmedInThisMount, let before = old.length, let after = new.length, before != after {
            return .lengthChanged(before: before, after: after)
        }
        if confirmedInThisMount, old.isReplaced(by: new) { return .validatorChanged }
        if validatorVanished(was: old, now: new, confirmedInThisMount: confirmedInThisMount) { return .etagVanished }
        if status == 200, askedRange, !old.isReplaced(by: new) { return .wholeBodyForRange }
        return nil
    }
}

/// The overlap check: a fetch that continues cached bytes starts a little
/// before them and compares (docs/DESIGN.md, "Episodes and their variants").
/// An origin with no validator that stitches at one URL is caught here.
extension EpisodeRules.State {
    // MARK: - Static properties

    /// How many cached bytes a continuing fetch asks again, to compare.
    static let overlapBytes: Int64 = 4096

    /// Why an overlap that did not match marks the origin.
    static let overlapMismatch = StitchReason.overlapMismatch

    /// Why an origin that sends no validator is streamed whole from its
    /// first response: nothing shows that two of its responses are one
    /// version, and an overlap check only catches ads that straddle a
    /// boundary (`unproven`).
    public static let noValidator = StitchReason.noValidator

    /// Whether an answer carries nothing that could prove two responses
    /// are one version (`OriginVersion.isProvable`): no validator, a weak
    /// ETag, or a Last-Modified too close to its `Date` to be strong (the
    /// HTTP layer keeps only a strong one, `OriginVersion.validating`). Its
    /// bytes may only be cached as one response from byte 0
    /// (docs/DESIGN.md, "A version that cannot be proven").
    static func unproven(_ answer: OriginVersion) -> Bool {
        !answer.isProvable
    }

    /// Every byte of the episode is cached (final, or about to be): one
    /// variant whole, whatever later responses bring.
    var holdsEveryByte: Bool {
        guard let length, length > 0 else { return false }
        return present.contains(0..<length)
    }

    /// Whether a response of this mount came without the ETag an earlier one
    /// confirmed: nothing vouches that its bytes continue the cached ones,
    /// so it counts as another version (and marks the origin unstable).
    static func validatorVanished(was old: OriginVersion, now new: OriginVersion, confirmedInThisMount: Bool) -> Bool {
        confirmedInThisMount && old.etag != nil && new.etag == nil
    }

    // MARK: - Events

    /// Overlap bytes `bytes` of fetch `id` arrived for `range` (below its
    /// `checkUpTo`): kept to compare, never written. `false`: stale.
    public mutating func hold(id: UInt64, generation: UInt64, range: Range<Int64>, bytes: [UInt8]) -> Bool {
        guard self.generation == generation, var progress = fetches[id], progress.generation == generation
        else { return false }
        var held = progress.held
        if held.bytes.isEmpty { held.offset = range.lowerBound }
        if held.offset + Int64(held.bytes.count) == range.lowerBound, held.bytes.count < Int(Self.overlapBytes) * 2 {
            held.bytes += bytes
        }
        progress.held = held
        progress.cursor = max(progress.cursor, range.upperBound)
        fetches[id] = progress
        return true
    }

    /// Held overlaps whose bytes are all on disk (in `present`, or in
    /// `written`, which the writer just wrote and has not marked yet), taken
    /// to be compared by the writer outside the lock, each with its fetch.
    public mutating func takeComparableOverlaps(written: Range<Int64>? = nil) -> [(id: UInt64, offset: Int64, bytes: [UInt8])] {
        var onDisk = present
        if let written { onDisk.insert(written) }
        var ready: [(id: UInt64, offset: Int64, bytes: [UInt8])] = []
        for (id, progress) in fetches where progress.generation == generation {
            let held = progress.held
            guard !held.bytes.isEmpty,
                onDisk.contains(held.offset..<held.offset + Int64(held.bytes.count))
            else { continue }
            ready.append((id, held.offset, held.bytes))
            fetches[id]?.held = EpisodeRules.FetchProgress.Held()
        }
        return ready
    }

    /// Overlaps of `generation` matched the cached bytes: a second
    /// response served the same bytes, so the version is agreed. Returns
    /// the opens that waited for that proof (`open`), answered now.
    public mutating func overlapMatched(generation: UInt64) -> [Effect] {
        guard self.generation == generation else { return [] }
        current.agree()
        // Not opens waiting for a probe of their own (`validated` is then
        // false): only the probe's head answers those.
        return validated ? answerOpens(dropAttributes: false) : []
    }

    /// Fetch `id` brought bytes that differ from the cached ones it
    /// overlapped: the origin serves different bytes per request. Every
    /// cached byte goes (they may be of another variant than what comes
    /// next) and this response stops; the mark is kept. Apply under the
    /// index lock, like a version change. `nil`: the fetch is stale.
    public mutating func continuityBroken(id: UInt64) -> Transition? {
        guard let progress = fetches[id], progress.generation == generation else { return nil }
        let dropped = dropVersion(keeping: id, existing: nil)
        fetches[id] = nil
        var durable: [Effect] = [.dropIndexRanges]
        if let length, let free = freeingOldBytes(old: length, new: length) { durable.append(free) }
        var then: [Effect] = []
        if variant.markStitched(Self.overlapMismatch) {
            then.append(.markUnstable(Self.overlapMismatch))
        }
        then.append(.invalidateKernel(pages: true))
        then += dropped.failed.map(Effect.fail)
        // Opens that waited for this proof read what comes next.
        then += answerOpens(dropAttributes: true)
        if !dropped.again.isEmpty { then.append(.resume(reads: dropped.again, sized: [])) }
        return Transition(durable: durable, then: then)
    }
}

/// A show whose host stitches (docs/DESIGN.md, "A show that stitches"):
/// hosts stitch every episode of a show, and the second response of an
/// episode shows it too late for a file already open on the first (it read
/// the first variant's head; no other may follow it). So an episode of a
/// show with an episode marked unstable starts marked itself, before its
/// first byte, and is streamed whole from its first open.
extension EpisodeRules.State {
    // MARK: - Static properties

    /// Why an episode is marked for its show.
    public static let showStitches = StitchReason.showStitches

    // MARK: - Events

    /// Whether the episode holds nothing a new variant could clash with:
    /// no byte (never fetched, or evicted), nothing open or on its way,
    /// and no mark of its own. Only such an episode takes its show's mark
    /// (`inheritStitching`).
    public var holdsNothing: Bool {
        unstable == nil && present.isEmpty && spill.isEmpty && fetches.isEmpty && handles.isEmpty
            && openWaiters.isEmpty
    }

    /// Marks the episode unstable for its show (another of its episodes is
    /// marked), if it `holdsNothing`. Returns the mark, for the index.
    public mutating func inheritStitching() -> StitchReason? {
        guard holdsNothing else { return nil }
        variant.markStitched(Self.showStitches)
        return unstable
    }
}
