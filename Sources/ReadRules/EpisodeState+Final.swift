/// A complete episode is kept (docs/DESIGN.md, "Episodes and their
/// variants"): once every byte of one variant is cached the episode is
/// final, as in a podcast app's downloads. A revalidation that finds
/// another variant at another link (the host stitched other ads into a
/// fresh signed link) keeps it; an unstable one is opened without asking
/// at all (`openStreamed`). The feed changing the episode replaces it
/// (`CacheIndex.register`), and so does a new version at the very link the
/// final one came from (a publisher who replaced the file).
extension EpisodeRules.State {
    // MARK: - Properties

    /// Whether the episode is final and still has all of its bytes.
    public var isComplete: Bool {
        guard isFinal, let length else { return false }
        return present.contains(0..<length)
    }

    /// A final episode whose pinned link stopped working (403, 404, 410):
    /// the enclosure would only lead to another variant, so its opens are
    /// answered from the cache without asking (`forgetRedirect`).
    var finalLinkGone: Bool {
        isComplete && effectiveURL == nil && finalURL != nil
    }

    // MARK: - Events

    /// Marks the episode final once every byte is cached; the mark goes to
    /// the index with the next commit (with the validator).
    mutating func noteIfFinal() {
        guard !isFinal, !unprovenBytes, let length, length > 0, present.contains(0..<length) else { return }
        variant.becameFinal()
        unsaved.insert(.validators)
    }

    /// Whether an answer from `url` that shows another version leaves the
    /// final episode as it is: it came from another link than the final
    /// variant did.
    func keepsFinal(answerFrom url: String) -> Bool {
        guard isComplete, let finalURL else { return false }
        return url != finalURL
    }

    /// Keeps the final episode: the answer confirms nothing new, opens are
    /// answered on the cached variant and the response stops at its head.
    mutating func keepFinal(id: UInt64, now: Double) -> [Effect] {
        let early = validation.confirm(at: now)
        if var progress = fetches[id] {
            progress.upper = progress.cursor
            fetches[id] = progress
        }
        let (reads, sized) = settle(early)
        return [.logKeptFinal] + answerOpens(dropAttributes: false)
            + [.resume(reads: reads, sized: sized), .answerAtEnd, .endAfterHead]
    }
}
