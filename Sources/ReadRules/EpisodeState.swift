public import RangeCache

/// One episode's read state: what is cached, what is on its way, who
/// waits, and the open files with their streaks. A plain value, changed
/// only by its events (`EpisodeState+*.swift`: open, read, head, body,
/// fetch ended, commit, release, and the size a `stat` shows) under
/// `EpisodeRules.state`'s lock. The events take no lock, do no I/O and see no
/// FUSE request or transfer: they return the effects for `EpisodeReader`,
/// the driver, to carry out after the lock is released. Tests drive them
/// directly.
///
/// Lock order: the reader's index lock (`Durability.lock`), then an episode's state,
/// then the leaf locks (among them the link estimates', `Network.estimates`,
/// which a read event's context takes under the episode's lock for its
/// pinned link's host).
///
/// Invariant: `present` lists only bytes that were written to the scratch
/// file for the current `generation`; the durable index hears of them
/// later, after `fdatasync` (guarantee 1 of docs/DESIGN.md).
extension EpisodeRules {
    /// A read waiting for bytes to arrive.
    public struct Waiter: Sendable {
        /// How a read waits: with its reader's stream, or after a jump.
        enum Stance: Equatable, Sendable {
            /// The read landed near where its reader stopped: it stays with
            /// its stream (`JoinOrJump`) and is never judged again.
            case following
            /// It jumped, and began to wait at `since` (monotonic seconds):
            /// while it waits for a fetch that is not its own it is judged
            /// again when `recheckDue` comes, and a fetch that brought
            /// nothing since has been silent at least that long.
            case jumped(since: Double)
        }

        public internal(set) var range: Range<Int64>
        public internal(set) var reply: EpisodeRules.ReadToken
        var generation: UInt64
        /// The open file that reads (a fetch that yields keeps the other
        /// readers' windows, `EpisodeRules.State.yield`).
        var handle: UInt64
        var stance: Stance

        /// When it began to wait, if it jumped; `nil`: it follows its
        /// stream and is never judged again.
        var jumpedSince: Double? {
            if case .jumped(let since) = stance { return since }
            return nil
        }
    }

    /// Who opened a file: it decides whether anybody hears the open's
    /// answer.
    enum Opener: Equatable, Sendable {
        /// The kernel, for a process: it hears the answer's `keep_cache`
        /// and drops the attributes it is told to.
        case kernel
        /// The cache itself (the keeper's download, a scan's fetch ahead):
        /// nobody sees its `keep_cache`, so its open must not clear
        /// `kernelPagesStale`, and it counts as no open file of a listener.
        case cache
    }

    /// An open, answered at once or waiting for a response of this mount
    /// (validation and the true length).
    public struct OpenWaiter: Equatable, Sendable {
        var reply: EpisodeRules.OpenToken
        var handle: UInt64
        /// When it was opened (monotonic seconds): an open before the
        /// claim's `keptUntil` drops the attributes the kernel keeps
        /// (`EpisodeRules.Claim`).
        var openedAt: Double
        var opener: Opener
    }

    /// The feed's claimed size that `stat` shows until the origin's is
    /// known (`EpisodeRules.State.sizeShown`), and until when
    /// (`keptUntil`, monotonic seconds) the kernel may keep it: `ls -l` of
    /// a big show then costs no round trip per file. Every open before
    /// then drops it before it answers (`OpenAnswer.dropAttributes`): not
    /// only the first, since a second open may be answered before the
    /// first one's drop is sent.
    enum Claim: Equatable, Sendable {
        /// Not opened in this mount: nothing can contradict the claim, and
        /// each `stat` lets the kernel keep it longer.
        case shown(keptUntil: Double)
        /// Opened: the claim is shown with a timeout of 0, so every read
        /// past it and every `stat` asks again; `keptUntil` no longer moves.
        case opened(keptUntil: Double)

        var keptUntil: Double {
            switch self {
            case .shown(let until), .opened(let until): until
            }
        }
    }

    /// How far an in-flight fetch has come: bytes `[cursor, upper)` are
    /// not on disk yet; `[cursor, received)` arrived and wait for the
    /// episode's writer.
    public struct FetchProgress: Sendable {
        // MARK: - Nested types

        /// Where a fetch is: its response head not come yet, come, or its
        /// body flowing. A phase holds only what is known in it: a fetch
        /// without its head has no arrival times.
        enum Phase: Equatable, Sendable {
            /// Sent; its response head has not come.
            case awaitingHead
            /// Its response head arrived and was accepted; no body byte
            /// has been timed yet.
            case headArrived
            /// Body bytes arrive (`Arrivals`).
            case receiving(Arrivals)
        }

        /// What a fetch is for, which decides who it serves and how it
        /// ends. A fetch that answers on arrival never yields, so it is never
        /// cut short while a reader waits on it; one cut short answers
        /// nobody from memory.
        enum Role: Equatable, Sendable {
            /// Read-ahead: it streams ahead of its readers, and yields to a
            /// reader's jump (`EpisodeRules.State.yield`).
            case readAhead
            /// A probe, or a short fetch for a read that jumped: its readers
            /// are answered from memory on the network thread as the bytes
            /// arrive, without waiting for the writer's hop. It never yields.
            case answersOnArrival
            /// Cut short by a read that jumped ahead of it, or stopped for
            /// want of readers: bytes past `upper` are not wanted, and the
            /// transfer stops quietly when they come.
            case cutShort
        }

        /// When a fetch's body bytes arrived (monotonic seconds): its own
        /// rate since the first (`rate(link:now:)`), and its silence since
        /// the last.
        struct Arrivals: Equatable, Sendable {
            /// When the first body bytes arrived, and where they began.
            var firstTime: Double
            var firstOffset: Int64
            /// When the last body bytes arrived.
            var lastTime: Double
        }

        /// Overlap bytes that arrived, from `offset`, waiting to be
        /// compared with the bytes on disk there once those are there
        /// (`EpisodeRules.State.checkingContinuity`). Empty: none held.
        struct Held: Sendable {
            var offset: Int64 = 0
            var bytes: [UInt8] = []
        }

        // MARK: - Properties

        public internal(set) var cursor: Int64
        public internal(set) var upper: Int64
        var generation: UInt64
        /// Where the next body byte from the network goes.
        var received: Int64
        /// How far the writer has allocated blocks ahead (writer only).
        var allocated: Int64 = 0
        /// Bytes below this were cached, or on their way, when the fetch
        /// began: the fetch starts a little before them, and those bytes
        /// are kept in `held` and compared with the cached ones, never
        /// written (`EpisodeRules.State.checkingContinuity`).
        public internal(set) var checkUpTo: Int64 = 0
        /// Overlap bytes that arrived, waiting to be compared.
        var held = Held()
        /// Where the range asked ends, when the origin's 206 answered less
        /// of it than asked (a host that caps its answers): what is left of
        /// the rest is asked when this answer ends, gap by gap
        /// (`EpisodeRules.State.fetchEnded`).
        var askedUpTo: Int64?
        /// What it is for (`Role`).
        private(set) var role: Role
        /// Its head, then its body.
        var phase = Phase.awaitingHead

        // MARK: - Init

        init(cursor: Int64, upper: Int64, generation: UInt64, role: Role = .readAhead) {
            self.cursor = cursor
            self.upper = upper
            self.generation = generation
            self.received = cursor
            self.role = role
        }

        // MARK: - Internal methods

        /// Its readers are answered from memory as the bytes arrive.
        var answersOnArrival: Bool { role == .answersOnArrival }

        /// Cut short: bytes past `upper` are not wanted (`Role.cutShort`).
        var cutShort: Bool { role == .cutShort }

        /// Ends it at `end`: what comes past it is not wanted, and nobody
        /// waits to be answered from it on arrival.
        mutating func cut(at end: Int64) {
            upper = end
            askedUpTo = nil
            role = .cutShort
        }

        /// Where the bytes it will still bring end: its answer's end, or
        /// the end of the range it asked when the origin answered less and
        /// the rest is asked next (`askedUpTo`).
        var bringsUpTo: Int64 { max(upper, askedUpTo ?? 0) }

        /// Its response head arrived and was accepted.
        var headArrived: Bool {
            if case .awaitingHead = phase { return false }
            return true
        }

        /// When its last body bytes arrived: a fetch silent since then is
        /// judged by that silence too (`silence`). `nil`: none yet.
        var lastArrival: Double? {
            if case .receiving(let arrivals) = phase { return arrivals.lastTime }
            return nil
        }

        /// Body bytes from `offset` arrived at `now`: the first are timed
        /// from here (bytes arriving show its head came).
        mutating func arrived(at offset: Int64, now: Double) {
            if case .receiving(var arrivals) = phase {
                arrivals.lastTime = now
                phase = .receiving(arrivals)
            } else {
                phase = .receiving(Arrivals(firstTime: now, firstOffset: offset, lastTime: now))
            }
        }
    }

    /// Per open file: the version it reads and its sequential streak.
    public struct HandleState: Sendable {
        var generation: UInt64
        var nextOffset: Int64 = 0
        var streak: Int = 0
        /// Where a read behind `nextOffset`, within the window's reach,
        /// ended: a seek back, or a read the kernel sent late; a read on
        /// from here moves the reader here (`ReadPlan.follow`).
        var rewound: Int64?
        /// Who opened it.
        var opener: EpisodeRules.Opener
        /// Where it read (for `ScanPattern`, at its close).
        public internal(set) var extent = ReadExtent()
    }

    /// A read-ahead held back (`State.heldReadAhead`): the file whose read
    /// wanted it, where that read ended, the window and reach it had, and
    /// the read's context.
    struct HeldReadAhead: Sendable {
        var handle: UInt64
        var end: Int64
        var window: Int64
        var reach: Int64
        var generation: UInt64
        var context: State.ReadContext
    }

    /// A read of a provisional handle, made again once the first response
    /// told the episode's length and version.
    public struct EarlyRead: Equatable, Sendable {
        public internal(set) var handle: UInt64
        public internal(set) var offset: Int64
        public internal(set) var size: Int
        public internal(set) var reply: EpisodeRules.ReadToken
    }

    /// A warning about an episode that is logged once, not per request.
    public enum Warning: Hashable, Sendable {
        /// The origin answered a range with the whole body.
        case ignoresRange
        /// A write to the episode's cache file failed (not for lack of room).
        case writeFailure
    }

    /// Everything mutable about an episode. Guarded by `EpisodeRules.state`.
    public struct State: Sendable {
        /// The version cached now: its generation, length, validators and
        /// bytes on disk (`Version`, changed only through its transitions).
        var current = EpisodeRules.Version()
        /// Which variant the cached bytes are and where requests go: a
        /// pinned link, a stitching origin's stream, a final episode
        /// (`Variant`, changed only through its transitions).
        var variant = Variant()
        /// Whether a response in this mount confirmed the cached version,
        /// and who waits for it to: the opens, the probe asking and the
        /// files opened before it came, with their reads and `stat`s
        /// (`EpisodeRules.Validation`).
        var validation = EpisodeRules.Validation.unconfirmed(opens: [])
        /// The kernel may hold pages of a version the origin replaced: the
        /// next open clears them (keep_cache off) before anything reads.
        var kernelPagesStale = false
        /// The feed's claimed size a `stat` shows until the origin's is
        /// known, before and after the first open (`EpisodeRules.Claim`).
        var claim = EpisodeRules.Claim.shown(keptUntil: 0)
        /// The cached bytes of replaced versions, by generation, while files
        /// opened on them are open (`EpisodeState+Retired.swift`).
        public internal(set) var retired: [UInt64: EpisodeRules.RetiredVersion] = [:]
        /// What the index has not heard of yet (`Unsaved`).
        public internal(set) var unsaved: EpisodeRules.Unsaved = []
        /// Durable steps of a version change that failed, still to be done:
        /// until then the episode is stopped (`EpisodeState+Unfinished.swift`).
        var unfinishedSteps: [Effect] = []
        public internal(set) var fetches: [UInt64: FetchProgress] = [:]
        var waiters: [Waiter] = []
        public internal(set) var handles: [UInt64: HandleState] = [:]
        /// Early reads that need more than the first response brings, by
        /// the fetch whose end makes them again (`settleAfterHead`). Not
        /// inside the fetch: `fetchEnded`, or a version change, forgets the
        /// fetch before `fetchSettled` makes them; nor inside `validation`,
        /// which moves on (an open past `revalidateAfter` asks again)
        /// meanwhile. A second first response before the first fetch ends
        /// adds its own entry, so no read is lost.
        var readsAfterFetch: [UInt64: [EarlyRead]] = [:]
        /// The read-ahead a reader wanted while a response of a version not
        /// agreed yet still brought its bytes (`unprovenFetchStillBringing`):
        /// it goes out when that response ends, whether or not the reader
        /// reads again, so the next head shows a host that stitches while
        /// that reader is still open, as it would have without the wait.
        var heldReadAhead: HeldReadAhead?
        /// The current version's scratch file: not open, open, or being
        /// replaced (`EpisodeRules.Scratch`).
        var storage = EpisodeRules.Scratch.notOpen
        var lastRead: Int64 = 0
        /// The enclosure URL a refresh moved the episode to (`Catalog.Renewal`),
        /// asked rather than that of the `Episode` a caller holds, which may
        /// be one from before the move (a keeper's download, a size check,
        /// a scan's fetch ahead).
        public var enclosureURL: String?
        /// The warnings about this episode already logged: each is said once.
        var warned: Set<EpisodeRules.Warning> = []
        /// How many times the last open file was closed: fetches nobody
        /// reads stop a grace after a closing, if it is still the last one
        /// (`stopUnreadStreams(afterClosing:)`: the driver's timer names the
        /// closing it was set for, so a reopen and a later close push the
        /// stop back a whole grace, whatever the timer's clock).
        public internal(set) var closings: UInt64 = 0
        /// Where the last sequential reader stopped and how long its streak
        /// was, when it closed (`monotonicSeconds()`): a player that closes
        /// and reopens to read on keeps its read-ahead window.
        var lastStream: (end: Int64, streak: Int, closedAt: Double)?
        /// Fetched bytes that could not be written to disk (not in
        /// `present`, never committed).
        var spill = SpillBuffer()

        /// Bytes a fetch gave up when it yielded to a reader's jump: fetched
        /// once the episode has no fetch on its way (`fillFetch`), each byte
        /// once (what arrived meanwhile is skipped).
        var deferred = RangeSet()

        /// A `recheckDue` event is on its way (the driver's timer): reads
        /// that jumped and wait for a fetch not their own are judged again
        /// then, so one that joined a stream which stalled afterwards does
        /// not wait for it (`EpisodeState+Yield.swift`).
        var recheckArmed = false

        /// The last fetch id handed out; ids are the episode's own.
        var lastFetchID: UInt64 = 0

        /// The size check on its way (`startSizeCheck`), if any: its head
        /// tells the length and keeps no byte, unless an open joined it.
        var sizeCheck: UInt64?

        init() {}

        /// A state made after `stat`s showed the feed's claimed size, which
        /// the kernel may keep until `claimKeptUntil`.
        public init(claimKeptUntil: Double) {
            claim = .shown(keptUntil: claimKeptUntil)
        }

        /// The state of an episode a refresh moved to another file at
        /// `enclosureURL` once the old one's bytes are forgotten: nothing
        /// known but its new link, and the kernel's pages of the inode are
        /// the old file's, dropped by the next open it hears of (as after
        /// a version change).
        public init(movedTo enclosureURL: String, claimKeptUntil: Double) {
            self.init(claimKeptUntil: claimKeptUntil)
            self.enclosureURL = enclosureURL
            kernelPagesStale = true
        }

        /// The state an earlier mount left in the index: its ranges, its
        /// validator and the link it is pinned to.
        public init(restoring record: EpisodeRecord) {
            current = EpisodeRules.Version(restoring: record)
            // Ranges the version could not take (no length) are forgotten
            // by the next commit (the reader queues it when it adopts the
            // episode).
            if record.length == nil, !record.ranges.isEmpty { unsaved = .ranges }
            // Cached by an earlier podfs from responses nothing shows to be
            // one version (this one marks such an episode at its first
            // response): maybe a mix of variants, complete or not. The next
            // stream from byte 0 replaces them.
            variant = Variant(
                restoring: record.variant,
                unprovenBytes: record.variant.unstable == nil && !present.isEmpty && Self.unproven(version))
            lastRead = record.lastRead ?? 0
        }

        /// Until when the kernel may keep the claimed size it was given.
        public var claimKeptUntil: Double { claim.keptUntil }

        /// The link a fetch asks when none is given: the pinned end of the
        /// redirect chain, else the enclosure a refresh moved it to; `nil`:
        /// the caller's `Episode.url`.
        public var linkToAsk: String? { effectiveURL ?? enclosureURL }

        /// Opened in this mount (`EpisodeRules.Claim.opened`).
        var opened: Bool {
            if case .opened = claim { return true }
            return false
        }

        /// Bytes a read can be answered from now: on disk or in `spill`.
        var available: RangeSet {
            guard !spill.isEmpty else { return present }
            var all = present
            for range in spill.ranges.ranges { all.insert(range) }
            return all
        }

        /// Whether a response in this mount confirmed the cached version.
        var validated: Bool { validation.isConfirmed }

        /// When the origin confirmed or changed the version, while that holds.
        var validatedAt: Double? { validation.confirmedAt }

        /// The probe on its way, if one is.
        var probeID: UInt64? { validation.probe }

        /// The opens waiting for a response (`EpisodeRules.Validation`).
        var openWaiters: [EpisodeRules.OpenWaiter] { validation.opens }

        /// Reads of files opened before the first response, waiting for it.
        var earlyReads: [EpisodeRules.EarlyRead] { validation.provisional.reads }

        /// `stat`s waiting for the first response while files opened before
        /// it are open (`stat` of an open file shows the origin's size, not
        /// the feed's claim).
        var sizeWaiters: [EpisodeRules.SizeToken] { validation.provisional.sized }

        /// Whether open file `handle` was opened before the first response
        /// and waits for it (`EpisodeRules.Provisional`).
        func isProvisional(_ handle: UInt64) -> Bool {
            validation.provisional.handles.contains(handle)
        }

        /// A new id for a fetch of this episode.
        mutating func takeFetchID() -> UInt64 {
            lastFetchID &+= 1
            return lastFetchID
        }

        /// Bytes of the current version on their way, not yet on disk.
        var pending: RangeSet {
            var pending = RangeSet()
            for progress in fetches.values where progress.generation == generation && progress.cursor < progress.upper {
                pending.insert(progress.cursor..<progress.upper)
            }
            return pending
        }
    }
}
