import Logging
import RangeCache
import ReadRules

/// The driver's side of an episode's variant (docs/DESIGN.md, "Episodes
/// and their variants"): marks the state machine decided on, kept in the
/// index and said once in the log.
extension EpisodeReader {
    // MARK: - Methods

    /// The episode's origin serves different bytes per request: the mark
    /// goes to the index (a failure is logged; the mark is a hint, the
    /// bytes stay one variant either way).
    func markUnstable(_ episode: Episode, reason: StitchReason) {
        known.stitchingShows.insert(episode.parent)
        let names: Logger.Metadata = ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"]
        if reason == Episode.State.noValidator {
            logger.notice(
                """
                the origin sends no validator that proves a version (no strong ETag, no Last-Modified at least a \
                minute old), so nothing shows two of its responses are one variant: the episode is downloaded \
                whole from its start in one response
                """,
                metadata: names)
        } else {
            logger.notice(
                "the origin serves different bytes per request (it stitches ads per request); podfs keeps one variant",
                metadata: names.merging(["reason": "\(reason)"]) { first, _ in first })
        }
        recordUnstable(episode, reason: reason)
    }

    /// The mark goes to the index; a failure is logged.
    func recordUnstable(_ episode: Episode, reason: StitchReason) {
        do {
            try index.markUnstable(key: episode.key, reason: reason.code)
        } catch {
            logger.warning("could not record an unstable origin in the cache index", metadata: ["error": "\(error)"])
        }
    }
}

extension EpisodeReader {
    // MARK: - A show that stitches

    /// Whether an episode of `episode`'s show was marked unstable by its
    /// own responses, in this mount or an earlier one (`StitchingShows`).
    func showStitches(_ episode: Episode) -> Bool {
        known.stitchingShows.contains(episode.parent)
    }

    /// `episode` took its show's mark before its first byte
    /// (`Episode.State.inheritStitching`): the mark goes to the index.
    func inheritStitching(_ episode: Episode, reason: StitchReason) {
        logger.info(
            "another episode of this show is stitched per request: this one is streamed whole from its first byte",
            metadata: ["episode.key": "\(episode.key)", "episode.name": "\(episode.name)"])
        recordUnstable(episode, reason: reason)
    }
}

extension EpisodeReader {
    // MARK: - Continuity

    /// An overlap did not match (`Episode.State.continuityBroken`): under
    /// the index lock, as a version change, the cached bytes are forgotten
    /// durably before they are freed; then readers of them fail.
    func continuityBroken(_ episode: Episode, fetchID: UInt64) {
        let result = durability.lock.withLock { _ -> (Episode.State.Transition, [Episode.State.Effect])? in
            guard let outcome = episode.state.withLock({ $0.continuityBroken(id: fetchID) }) else { return nil }
            return (outcome, durability.carryOut(outcome.durable, of: episode))
        }
        guard let (outcome, unfinished) = result else { return }
        guard unfinished.isEmpty else {
            stop(episode, unfinished: unfinished, then: outcome.then, fetch: nil)
            return
        }
        carryOut(outcome.then, of: episode)
    }
}

extension EpisodeReader {
    // MARK: - Overlaps

    /// On the writer: holds the part of a chunk that overlaps bytes cached
    /// or on their way when its fetch began (`Episode.State.hold`) and
    /// compares what can be compared now. Returns where the rest of the
    /// chunk goes (`skipped` bytes were held), or `nil` when nothing is
    /// left to write (all held, stale, or a mismatch dropped the episode).
    func holdOverlap(
        _ chunk: BodyChunk, count: Int, at offset: Int64, generation: UInt64, for fetch: Fetch
    ) -> (offset: Int64, count: Int, skipped: Int)? {
        let episode = fetch.episode
        let checkUpTo = episode.state.withLock { $0.fetches[fetch.id]?.checkUpTo ?? 0 }
        guard offset < checkUpTo else { return (offset, count, 0) }
        let skipped = Int(min(Int64(count), checkUpTo - offset))
        let bytes = Array(UnsafeRawBufferPointer(rebasing: chunk.bytes[0..<skipped]))
        let range = offset..<offset + Int64(skipped)
        guard episode.state.withLock({ $0.hold(id: fetch.id, generation: generation, range: range, bytes: bytes) }),
            compareHeldOverlaps(of: episode), skipped < count
        else { return nil }
        return (offset + Int64(skipped), count - skipped, skipped)
    }

    /// Compares every held overlap whose bytes are on disk (counting
    /// `written`, just written, not yet marked) with those bytes. `false`:
    /// one differed, and the episode's cached bytes were dropped.
    func compareHeldOverlaps(of episode: Episode, written: Range<Int64>? = nil) -> Bool {
        let (ready, generation) = episode.state.withLock { ($0.takeComparableOverlaps(written: written), $0.generation) }
        guard !ready.isEmpty else { return true }
        guard let scratch = episode.state.withLock({ $0.scratch })?.file else { return true }
        for overlap in ready {
            let cached = try? scratch.read(count: overlap.bytes.count, at: overlap.offset)
            if cached != overlap.bytes {
                continuityBroken(episode, fetchID: overlap.id)
                return false
            }
        }
        carryOut(episode.state.withLock { $0.overlapMatched(generation: generation) }, of: episode)
        return true
    }
}
