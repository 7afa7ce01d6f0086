extension EpisodeRules {
    /// Whether the origin confirmed an episode's cached version in this
    /// mount, and who waits for it to. Times are monotonic seconds
    /// (`monotonicSeconds()`).
    ///
    /// Each phase holds the opens, reads and `stat`s that wait in it, so a
    /// waiter without a phase to answer it cannot be written: files opened
    /// before the first response (`Provisional`) exist only while a probe
    /// asks, and opens wait only for a head on its way (`unconfirmed`), a
    /// probe (`asking`) or a second response's proof
    /// (`confirmedAwaitingProof`). It changes only through the transitions
    /// below.
    public enum Validation: Equatable, Sendable {
        /// Not confirmed now: never in this mount, or longer ago than
        /// `revalidateAfter` (`lapse`). `opens` wait for the head of a
        /// fetch on its way, which is not a probe of theirs.
        case unconfirmed(opens: [OpenWaiter])
        /// A probe is on its way; its head (or any other's) answers those
        /// who wait in `Asking`.
        case asking(Asking)
        /// A response confirmed (or changed) the version at `at`.
        case confirmed(at: Double)
        /// One response confirmed the version at `at`, and one on its way
        /// will show whether the origin serves the same bytes to each
        /// request: `opens` wait for that proof (`EpisodeRules.State.open`).
        case confirmedAwaitingProof(at: Double, opens: [OpenWaiter])

        // MARK: - Read

        /// Whether a response in this mount confirmed the cached version.
        var isConfirmed: Bool {
            switch self {
            case .confirmed, .confirmedAwaitingProof: true
            case .unconfirmed, .asking: false
            }
        }

        /// When the origin confirmed or changed the version, while that
        /// holds.
        var confirmedAt: Double? {
            switch self {
            case .unconfirmed, .asking: nil
            case .confirmed(let at), .confirmedAwaitingProof(let at, _): at
            }
        }

        /// The probe on its way, if one is.
        var probe: UInt64? {
            if case .asking(let asking) = self { return asking.probe }
            return nil
        }

        /// Whether opens wait for a second response's proof.
        var awaitsProof: Bool {
            if case .confirmedAwaitingProof = self { return true }
            return false
        }

        /// The opens waiting, in whichever phase.
        var opens: [OpenWaiter] {
            switch self {
            case .unconfirmed(let opens), .confirmedAwaitingProof(_, let opens): opens
            case .asking(let asking): asking.opens
            case .confirmed: []
            }
        }

        /// The files opened before the first response, and their waiting
        /// reads and `stat`s; empty unless a probe asks.
        var provisional: Provisional {
            if case .asking(let asking) = self { return asking.provisional }
            return Provisional()
        }

        // MARK: - Transitions

        /// `open` waits for a response: a head on its way, the probe, or,
        /// once confirmed, the proof a second response brings.
        mutating func wait(_ open: OpenWaiter) {
            switch self {
            case .unconfirmed(let opens): self = .unconfirmed(opens: opens + [open])
            case .asking(var asking):
                asking.opens.append(open)
                self = .asking(asking)
            case .confirmed(let at): self = .confirmedAwaitingProof(at: at, opens: [open])
            case .confirmedAwaitingProof(let at, let opens):
                self = .confirmedAwaitingProof(at: at, opens: opens + [open])
            }
        }

        /// Takes the opens that wait, to be answered now.
        mutating func takeOpens() -> [OpenWaiter] {
            let opens = opens
            switch self {
            case .unconfirmed: self = .unconfirmed(opens: [])
            case .asking(var asking):
                asking.opens = []
                self = .asking(asking)
            case .confirmed: break
            case .confirmedAwaitingProof(let at, _): self = .confirmed(at: at)
            }
            return opens
        }

        /// Fetch `probe` asks now: whoever waited keeps waiting, for it.
        mutating func ask(probe: UInt64) {
            switch self {
            case .unconfirmed(let opens), .confirmedAwaitingProof(_, let opens):
                self = .asking(Asking(probe: probe, opens: opens))
            case .asking(var asking):
                asking.probe = probe
                self = .asking(asking)
            case .confirmed: self = .asking(Asking(probe: probe))
            }
        }

        /// The confirmation is older than `revalidateAfter`: the next
        /// response must confirm the version again. The opens waiting for
        /// a proof wait for that response instead.
        mutating func lapse() {
            switch self {
            case .confirmed: self = .unconfirmed(opens: [])
            case .confirmedAwaitingProof(_, let opens): self = .unconfirmed(opens: opens)
            case .unconfirmed, .asking: break
            }
        }

        /// File `handle` opened before the first response: its reads and
        /// `stat`s wait for the probe. Only while one asks.
        mutating func openedEarly(_ handle: UInt64) {
            guard case .asking(var asking) = self else {
                return assertionFailure("EpisodeRules.Validation: a file opened early with no probe: \(self)")
            }
            asking.provisional.handles.insert(handle)
            self = .asking(asking)
        }

        /// A read of file `handle`: whether it waits for the first
        /// response (the file opened before it).
        mutating func readEarly(_ read: EarlyRead) -> Bool {
            guard case .asking(var asking) = self, asking.provisional.handles.contains(read.handle) else { return false }
            asking.provisional.reads.append(read)
            self = .asking(asking)
            return true
        }

        /// A `stat`: whether it waits for the first response (a file opened
        /// before it is open).
        mutating func statEarly(_ answer: @autoclosure () -> SizeToken) -> Bool {
            guard case .asking(var asking) = self, !asking.provisional.handles.isEmpty else { return false }
            asking.provisional.sized.append(answer())
            self = .asking(asking)
            return true
        }

        /// File `handle` was closed.
        mutating func released(_ handle: UInt64) {
            guard case .asking(var asking) = self, asking.provisional.handles.remove(handle) != nil else { return }
            self = .asking(asking)
        }

        /// A response confirmed (or changed) the version at `now`. Opens
        /// that waited wait on for the proof unless answered now
        /// (`takeOpens`); returns the files opened early, with their reads
        /// and `stat`s, to be settled.
        mutating func confirm(at now: Double) -> Provisional {
            let provisional = provisional
            let opens = opens
            self = opens.isEmpty ? .confirmed(at: now) : .confirmedAwaitingProof(at: now, opens: opens)
            return provisional
        }

        /// The probe ended without confirming anything: its opens wait on
        /// for another head. Returns the files opened early, with their
        /// reads and `stat`s, to be settled.
        mutating func probeGone() -> Provisional {
            guard case .asking(let asking) = self else { return Provisional() }
            self = .unconfirmed(opens: asking.opens)
            return asking.provisional
        }
    }

    /// A probe on its way, and who waits for it.
    public struct Asking: Equatable, Sendable {
        /// The fetch asking.
        var probe: UInt64
        /// Opens answered by its head.
        var opens: [OpenWaiter] = []
        /// Files opened before it came, and their reads and `stat`s.
        var provisional = Provisional()
    }

    /// Files opened before the first response of the mount arrived
    /// (nothing of the episode was cached, so nothing could be served
    /// stale): their reads and `stat`s wait for that response, and they
    /// read the version it tells.
    public struct Provisional: Equatable, Sendable {
        var handles: Set<UInt64> = []
        /// Their reads, made again once the response told the episode's
        /// length and version.
        var reads: [EarlyRead] = []
        /// `stat`s that show the origin's size, not the feed's claim.
        var sized: [SizeToken] = []

        var isEmpty: Bool { handles.isEmpty && reads.isEmpty && sized.isEmpty }
    }
}
