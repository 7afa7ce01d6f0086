import Locking

/// One streaming range fetch of an episode, fed by the network thread.
///
/// The fetch writes each chunk to the scratch file at its own offset and
/// only then marks it present, so a reader woken by it finds the bytes on
/// disk. Its progress lives in the episode's state (`fetches[id]`), where
/// readers see what is already on its way.
final class Fetch: FetchSink {
    // MARK: - Properties

    let id: UInt64
    let episode: Episode
    unowned let reader: EpisodeReader
    /// Attempts made so far, touched on the network thread and the retry
    /// timer only, one after the other.
    private let attempts = Locked(0)
    /// Why the response head was refused, if it was: the completion reports
    /// this instead of the transport's "aborted".
    private let refusal = Locked<FetchError?>(nil)

    // MARK: - Init

    init(id: UInt64, episode: Episode, reader: EpisodeReader) {
        self.id = id
        self.episode = episode
        self.reader = reader
    }

    // MARK: - FetchSink

    func receive(head: FetchHead) -> Bool {
        reader.fetch(self, receivedHead: head)
    }

    func receive(body: UnsafeRawBufferPointer) -> Bool {
        reader.fetch(self, received: body)
    }

    func complete(error: FetchError?) {
        let refused = refusal.withLock { reason in
            defer { reason = nil }
            return reason
        }
        reader.fetch(self, completedWith: refused ?? error)
    }

    /// Bytes arrived: only failures in a row count against the retry limit,
    /// so a long download survives any number of spaced-out drops.
    func madeProgress() {
        attempts.withLock { $0 = min($0, 1) }
    }

    /// Records why the current attempt's response was refused.
    func refuse(_ reason: FetchError) {
        refusal.withLock { $0 = reason }
    }

    // MARK: - Retries

    /// Counts one more attempt; returns the number made before it.
    func nextAttempt() -> Int {
        attempts.withLock { count in
            defer { count += 1 }
            return count
        }
    }
}
