/// A version change whose durable steps failed (docs/DESIGN.md, "A durable
/// step that fails"): the index could not forget the old version's ranges,
/// say, or the scratch file could not be punched. Until the steps are done,
/// the index may still list the old version's bytes, so no byte of the new
/// version may be fetched, written or served: the episode stops, its
/// readers get EIO, and the driver tries the steps again. It never goes on
/// half-changed, which would leave a file of two versions after a crash.
extension EpisodeRules.State {
    // MARK: - Properties

    /// Whether a version change's durable steps are still to be done.
    var stepsUnfinished: Bool { !unfinishedSteps.isEmpty }

    /// The steps still to be done, in their order: the driver tries them
    /// again under the index lock, the episode stopped until `stepsDone`
    /// (what fails comes back through `stepsFailed`).
    public var stepsDue: [Effect] { unfinishedSteps }

    // MARK: - Events

    /// The durable steps `steps` of a version change were not done (the
    /// first one failed; those after it did not run). `then` is what the
    /// change would do next: carried out without its fetches and probes.
    /// Every fetch of the current version stops and the reads waiting for
    /// it fail; the opens it answers read nothing but EIO until the steps
    /// are done (`stepsDone`).
    public mutating func stepsFailed(_ steps: [Effect], then: [Effect]) -> [Effect] {
        unfinishedSteps = steps
        var effects: [Effect] = []
        for (id, progress) in fetches where progress.generation == generation {
            fetches[id] = nil
            effects.append(.stop(id: id))
        }
        for effect in then {
            switch effect {
            case .fetch(let id, _):
                fetches[id] = nil
            case .probe(let probe), .check(let probe):
                fetches[probe.id] = nil
                guard probeID == probe.id else { continue }
                // The files opened early read the stopped version: their
                // reads are made again, and fail (`readStopped`).
                let early = settle(validation.probeGone())
                if !early.reads.isEmpty || !early.sized.isEmpty {
                    effects.append(.resume(reads: early.reads, sized: early.sized))
                }
            default:
                effects.append(effect)
            }
        }
        let current = generation
        let stopped = waiters.filter { $0.generation == current }
        waiters.removeAll { $0.generation == current }
        return effects + stopped.map { .fail($0.reply) }
    }

    /// The unfinished steps were done: the episode reads again.
    public mutating func stepsDone() {
        unfinishedSteps = []
    }

    // MARK: - Methods

    /// `effects` with no fetch while the steps are unfinished: their
    /// fetches are forgotten (`guardingVariants`).
    mutating func holdingFetchesForSteps(_ effects: [Effect]) -> [Effect] {
        guard stepsUnfinished else { return effects }
        return effects.filter { effect in
            guard case .fetch(let id, _) = effect else { return true }
            fetches[id] = nil
            return false
        }
    }

    /// Whether a read by open file `handle` fails now: it reads the
    /// current version, which is stopped.
    func readStopped(handle: UInt64) -> Bool {
        guard stepsUnfinished, let reader = handles[handle] else { return false }
        return !isProvisional(handle) && reader.generation == generation
    }
}
