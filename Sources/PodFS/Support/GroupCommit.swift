import Dispatch
import Locking

/// Requests that land together are carried out together: the first caller
/// to find nobody at work takes every request waiting (its own first) and
/// carries them out in one batch, and again while more wait; the others
/// wait for their answers. As a database groups commits: a thousand shows
/// that land within a few milliseconds of each other are registered in a
/// few transactions, not a thousand, and each waits for one batch at most.
///
/// The leader carries out a batch with the `batch` it was given (every
/// caller gives the same). It answers each request of a batch in order. A
/// batch never holds
/// two requests with the same `key` (the second waits for the next one):
/// a request may then depend on what the one before it changed.
final class GroupCommit<Request: Sendable, Answer: Sendable>: Sendable {
    // MARK: - Nested types

    /// A request waiting, and where its answer goes.
    private final class Slot: Sendable {
        let request: Request
        let key: String
        let answered = DispatchSemaphore(value: 0)
        let answer = Locked<Result<Answer, any Error>?>(nil)

        init(request: Request, key: String) {
            self.request = request
            self.key = key
        }
    }

    private struct Queue {
        var waiting: [Slot] = []
        var leading = false
        /// Requests submitted and not answered yet (waiting, or in the
        /// batch under way).
        var unanswered = 0
        /// Batches carried out, for tests and the bench.
        var batches = 0
    }

    // MARK: - Properties

    private let queue = Locked(Queue())
    /// The most requests in one batch: what a batch holds at once (its
    /// requests' work and answers) stays bounded.
    private let limit: Int

    // MARK: - Init

    init(limit: Int = 16) {
        self.limit = max(1, limit)
    }

    // MARK: - Methods

    /// Carries out `request` (in a batch with whatever else waits) and
    /// returns its answer.
    func submit(
        _ request: Request, key: String, batch: ([Request]) -> [Result<Answer, any Error>]
    ) throws -> Answer {
        let slot = Slot(request: request, key: key)
        let leads = queue.withLock { queue in
            queue.waiting.append(slot)
            queue.unanswered += 1
            defer { queue.leading = true }
            return !queue.leading
        }
        if leads { lead(batch) }
        slot.answered.wait()
        return try slot.answer.withLock { $0! }.get()
    }

    /// Batches carried out so far.
    var batches: Int {
        queue.withLock { $0.batches }
    }

    /// Requests submitted and not answered yet (tests force an overlap
    /// with it: the batch under way may have taken more than its leader's).
    var unanswered: Int {
        queue.withLock { $0.unanswered }
    }

    // MARK: - Private methods

    /// Carries out batches until nothing waits.
    private func lead(_ batch: ([Request]) -> [Result<Answer, any Error>]) {
        while true {
            let slots = queue.withLock { queue -> [Slot] in
                var keys = Set<String>()
                var taken: [Slot] = []
                var left: [Slot] = []
                for slot in queue.waiting {
                    if taken.count < limit, keys.insert(slot.key).inserted { taken.append(slot) } else { left.append(slot) }
                }
                queue.waiting = left
                if taken.isEmpty { queue.leading = false } else { queue.batches += 1 }
                return taken
            }
            guard !slots.isEmpty else { return }
            let answers = batch(slots.map(\.request))
            precondition(answers.count == slots.count, "a batch answers each of its requests")
            queue.withLock { $0.unanswered -= slots.count }
            for (slot, answer) in zip(slots, answers) {
                slot.answer.withLock { $0 = answer }
                slot.answered.signal()
            }
        }
    }
}
