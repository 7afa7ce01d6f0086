import Logging
import RangeCache
import ReadRules

/// The driver's side of an episode's variant (docs/DESIGN.md, "Episodes
/// and their variants"): whether its show stitches, a broken continuity
/// carried out as a version change, and the overlaps a fetch holds and
/// compares on the writer. The marks themselves are `StitchingShows`'s.
extension EpisodeReader {
    // MARK: - A show that stitches

    /// Whether an episode of `episode`'s show was marked unstable by its
    /// own responses, in this mount or an earlier one (`StitchingShows`).
    func showStitches(_ episode: Episode) -> Bool {
        known.stitchingShows.contains(episode.parent)
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
