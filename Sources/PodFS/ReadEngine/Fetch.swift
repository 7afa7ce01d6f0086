import Locking
import ReadRules

/// One streaming range fetch of an episode, fed by the network thread.
///
/// The network thread gathers the body into chunks (see the reader's
/// `chunkPool`) and hands each to the episode's writer, which
/// writes it to the scratch file at its own offset and only then marks it
/// present, so a reader woken by it finds the bytes on disk. A chunk is
/// handed over when full, whenever the bytes waiting in the socket are
/// all gathered, and after each of libcurl's hand-overs of a response's
/// first `minimumFetch` bytes, so nobody waits for bytes that already
/// arrived. Its progress lives in the episode's state (`fetches[id]`),
/// where readers see what is already on its way.
final class Fetch: FetchSink {
    // MARK: - Properties


    let id: UInt64
    let episode: Episode
    unowned let reader: EpisodeReader
    /// Asked for by nobody waiting (a check ahead of an open): a failure
    /// is not an error worth a log line of that level.
    let isBackground: Bool
    /// One of the cache's own downloads (a kept or pinned episode's fill,
    /// or the probe of its open): it never counts as a reader's fetch, and
    /// it gives way to them (`ForegroundLoad`).
    let forKeeper: Bool
    /// A size check (`EpisodeReader.checkSize`): the sizer says its
    /// failures, once a show.
    let isSizeCheck: Bool
    /// Seconds a size check's transfer may go without a byte, its head's
    /// included (connecting and redirects' answers do not count): its head
    /// tells the size, so a host that holds the byte back holds the
    /// connection no longer than this, not the usual 30 s.
    static let sizeCheckStall = 10
    /// Attempts made so far, touched on the network thread and the retry
    /// timer only, one after the other.
    private let attempts = Locked(0)
    /// Why the response head was refused, if it was: the completion reports
    /// this instead of the transport's "aborted".
    private let refusal = Locked<FetchError?>(nil)
    /// Set by `endAfterHead`.
    private let endedAfterHead = Locked(false)
    /// A size check's body, read to its end and dropped (`discardBody`):
    /// how many bytes it may bring, and how many came.
    private let discarding = Locked<(limit: Int64, seen: Int64)?>(nil)
    /// Body bytes gathered on the network thread and not yet handed over.
    private let gathered = Locked<BodyChunk?>(nil)
    /// When the current attempt's request went out and its head came
    /// (`monotonicSeconds()`), the body bytes since, and the URL that
    /// answered (where the redirects ended): what the reader's
    /// `LinkEstimates` learn from.
    private let timing = Locked<Timing>(Timing(sent: 0, asked: 0, head: nil, bytes: 0, answered: ""))

    private struct Timing {
        var sent: Double
        /// Where the current attempt's range starts: a 206 must start
        /// there (`Episode.State.reading(_:asked:)`).
        var asked: Int64
        var head: Double?
        var bytes: Int64
        var answered: String
    }
    /// Stops the current attempt's transfer (`RangeSource.start`).
    private let stopper = Locked<FetchStopper?>(nil)

    // MARK: - Init

    init(
        id: UInt64, episode: Episode, reader: EpisodeReader, isBackground: Bool = false, forKeeper: Bool = false,
        isSizeCheck: Bool = false
    ) {
        self.id = id
        self.episode = episode
        self.reader = reader
        self.isBackground = isBackground
        self.forKeeper = forKeeper
        self.isSizeCheck = isSizeCheck
    }

    // MARK: - FetchSink

    func receive(head: FetchHead) -> Bool {
        let now = monotonicSeconds()
        let (sent, asked) = timing.withLock { timing in
            timing.head = now
            timing.bytes = 0
            timing.answered = head.effectiveURL
            return (timing.sent, timing.asked)
        }
        // Not a size check's: the sizer sends four at a time, in the
        // background, each through the enclosure's redirects to a link it
        // does not keep; a show's episodes are read through its pinned links.
        if !isSizeCheck {
            reader.observe(latency: now - sent, of: episode, answered: head.effectiveURL, direct: head.redirects == 0)
        }
        return reader.fetch(self, receivedHead: head, askedFrom: asked)
    }

    func receive(body: UnsafeRawBufferPointer) -> Bool {
        if isSizeCheck, let goesOn = discarding.withLock({ discarding -> Bool? in
            guard var left = discarding else { return nil }
            left.seen += Int64(body.count)
            discarding = left
            // More than it announced (a chunked body ignores its length):
            // cut. A host that holds it back meets the check's stall
            // limit (`sizeCheckStall`).
            return left.seen <= left.limit
        }) {
            return goesOn
        }
        let before = timing.withLock { timing in
            defer { timing.bytes += Int64(body.count) }
            return timing.bytes
        }
        var remaining = body
        while !remaining.isEmpty {
            let full: BodyChunk? = gathered.withLock { chunk in
                let current = chunk ?? BodyChunk(from: reader.io.chunkPool)
                let taken = current.append(remaining)
                remaining = UnsafeRawBufferPointer(rebasing: remaining[taken...])
                chunk = current.isFull ? nil : current
                return current.isFull ? current : nil
            }
            if let full, !reader.fetch(self, handOff: full) { return false }
        }
        // The first bytes of a response go over as they come: a reader that
        // opened or jumped here waits for them, and the rest of libcurl's
        // batch (the end of which hands over the rest) may be a whole probe
        // behind them.
        if before < reader.tuning.minimumFetch { return handOffGathered() }
        return true
    }

    func bodyBatchEnded() {
        // Refused (the fetch yielded and has all it kept, is stale, or the
        // origin sent more than it announced): stopped as a refusal inside
        // `receive(body:)` is. From a slow host every chunk is handed over
        // here, never full, so without this such a fetch would run to its
        // end, sharing the link with the reads it yielded to.
        if !handOffGathered() { stop() }
    }

    func complete(error: FetchError?) {
        // The last bytes go to the writer first; the completion follows
        // them through the same queue, so it sees every byte written.
        handOffGathered()
        let (head, bytes, answered) = timing.withLock { ($0.head, $0.bytes, $0.answered) }
        // Not the keeper's: its two downloads share the link, and a rate
        // of half the link would shrink a listener's windows
        // (`LinkEstimate`). Nor a size check's: its one byte tells no rate.
        if error == nil, let head, !forKeeper, !isSizeCheck {
            reader.observe(bytes: bytes, in: monotonicSeconds() - head, of: episode, answered: answered)
        }
        let refused = refusal.withLock { reason in
            defer { reason = nil }
            return reason
        }
        let intended = endedAfterHead.withLock { $0 }
        reader.fetchCompleted(self, error: refused ?? (intended ? nil : error))
    }

    /// Bytes arrived: only failures in a row count against the retry limit,
    /// so a long download survives any number of spaced-out drops.
    func madeProgress() {
        attempts.withLock { $0 = min($0, 1) }
    }

    /// Hands what was gathered to the writer; `false` when the reader
    /// refused it (the fetch is stale or the origin sent too much).
    @discardableResult
    private func handOffGathered() -> Bool {
        let chunk: BodyChunk? = gathered.withLock { chunk in
            defer { chunk = nil }
            return chunk
        }
        guard let chunk, chunk.count > 0 else { return true }
        return reader.fetch(self, handOff: chunk)
    }

    /// Records why the current attempt's response was refused.
    func refuse(_ reason: FetchError) {
        refusal.withLock { $0 = reason }
    }

    /// The response is stopped after its head on purpose: the transfer's
    /// "aborted" is then no failure.
    func endAfterHead() {
        endedAfterHead.withLock { $0 = true }
    }

    /// A size check that wants its head only, and whose body is a byte or
    /// so (`count`): read to its end and dropped, rather than cut, so its
    /// connection serves the next check (a new one costs round trips,
    /// through TLS three). Cut all the same past `count` bytes.
    func discardBody(count: Int64) {
        discarding.withLock { $0 = (count, 0) }
    }

    /// The request of an attempt is about to go out.
    func markSent(askedFrom start: Int64) {
        timing.withLock { $0 = Timing(sent: monotonicSeconds(), asked: start, head: nil, bytes: 0, answered: "") }
    }

    /// The current attempt went out and can be stopped with `stop`.
    func attemptStarted(_ stop: FetchStopper?) {
        stopper.withLock { $0 = stop }
    }

    /// Stops the transfer now: it yielded and wants nothing more. Its
    /// completion ends it without a retry (`Episode.State.fetchEnded`).
    func stop() {
        let stop = stopper.withLock { stop in
            defer { stop = nil }
            return stop
        }
        stop?()
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

/// Where a fetch's request goes: a URL (the link an episode's version came
/// from, or the feed's) and the `If-Range` validator of that version.
struct RequestTarget {
    var url: String
    var validator: String?
}
