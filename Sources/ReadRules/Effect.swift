import RangeCache

extension EpisodeRules.State {
    /// What the driver does after an event, outside the episode's lock, in
    /// the order given: the one vocabulary of every event (open, read,
    /// recheck, head, body, fetch ended, retry due, fetch settled, overlap
    /// compared), carried out in one place (`EpisodeReader.carryOut`). An
    /// event that changes the version returns two lists (`Transition`):
    /// the durable ones, carried out under the index lock and stopped at
    /// the first failure, then the rest.
    ///
    /// Two other answers stay apart, as they are no effect of one episode:
    /// a flush's plan (`CommitEffect`) orders syncs and one commit across
    /// many episodes under the index lock; a head's verdict (`HeadVerdict`)
    /// tells the driver how to apply the event (again, holding the index
    /// lock) before any effect exists.
    public enum Effect: Sendable {
        // MARK: Fetches

        /// Start fetch `id` (registered in `fetches`) for `range`, to the
        /// episode's link (`EpisodeReader.target`).
        case fetch(id: UInt64, range: Range<Int64>)
        /// Send this probe (a fetch whose head answers the opens and reads
        /// that wait for it), to its own link.
        case probe(ProbeStart)
        /// Send this check nobody waits for (one byte, `If-Range`) in the
        /// background, like a mount's check (`openFromTheCache`).
        case check(ProbeStart)
        /// Stop fetch `id`'s transfer now: it yielded to a read and wants no
        /// more bytes (`yield`).
        case stop(id: UInt64)
        /// Stop the transfer whose head this is, after its head: nobody
        /// asked for the body.
        case endAfterHead
        /// Run `recheckDue` after `delay` seconds: a read that jumped waits
        /// for a fetch not its own.
        case recheck(after: Double)
        /// The fetch that ended is tried again after `delay` seconds, from
        /// where it stopped (`range` now, for the log: what it asks is
        /// decided when the delay has passed, `retryDue`); `url` is the
        /// remembered end of the redirect chain, if any; `attempt` the
        /// number of attempts made.
        case retry(range: Range<Int64>, validator: String?, url: String?, attempt: Int, delay: Double)
        /// Send the fetch whose retry is due again for `range`, from where
        /// it stopped as the state says now, to `url` (else the episode's).
        case launch(range: Range<Int64>, validator: String?, url: String?)
        /// The fetch is over (and forgotten): settle the opens and reads
        /// that waited for it (`fetchSettled`).
        case settle

        // MARK: Answers

        /// Answer an open: with `answer`, or EIO when `nil`.
        case answerOpen(EpisodeRules.OpenToken, EpisodeRules.OpenAnswer?)
        /// Answer a read with `range`, from the scratch file and `spilled`.
        case serve(EpisodeRules.ReadToken, Range<Int64>, spilled: [SpillBuffer.Piece])
        /// Answer a read with `range` from `file` and `spilled`: a replaced
        /// version's own file (`readRetired`), or the file its bytes were
        /// just written to or are at the end of (`ReadyRead`). Bytes of the
        /// chunk the driver has at hand may be taken instead of read back.
        case serveFile(EpisodeRules.ReadToken, Range<Int64>, from: EpisodeRules.FileToken?, spilled: [SpillBuffer.Piece])
        /// Answer a read with `range` from the body bytes that just arrived
        /// and the version's file for what was there before: a read of a
        /// short fetch, answered on the network thread before the writer
        /// stores the bytes (`Arrival`).
        case serveArriving(EpisodeRules.ReadToken, Range<Int64>)
        /// Answer a read with no bytes: it starts at or past the end.
        case answerEmpty(EpisodeRules.ReadToken)
        /// Answer a read with EIO: its handle is unknown, it reads bytes a
        /// version the origin replaced never had (guarantee 3), no fetch
        /// will bring its bytes now, or the length is unknown.
        case fail(EpisodeRules.ReadToken)
        /// Reads and `stat`s that waited for the first response, made again
        /// and answered.
        case resume(reads: [EpisodeRules.EarlyRead], sized: [EpisodeRules.SizeToken])
        /// Answer the reads at or past the (now known) end (`readsAtEnd`).
        case answerAtEnd

        // MARK: The index and the disk (durable)

        /// Forget the episode's ranges in the index (under the index lock,
        /// before any byte of the new version reaches the scratch file).
        case dropIndexRanges
        /// Free the old version's bytes in `scratch` (`old` bytes long) and
        /// give it the new length: only after the index forgot them (it
        /// must never list a punched byte).
        case reshape(EpisodeRules.FileToken, old: Int64, new: Int64)
        /// Files opened on the old version are still open and read its
        /// bytes from `old` (`kept`): detach it from its path and make a
        /// new, empty file of `length` bytes there for the new version
        /// (`replaced(with:)`). Only after the index forgot the ranges.
        case replace(old: EpisodeRules.FileToken, length: Int64)
        /// Save the new length and validators with the drop, and the link
        /// they came from (pinned, with who sent podfs there).
        case saveVersion(OriginVersion, pinnedURL: String?, pinnedIssuer: String?)
        /// Save them with the next commit of ranges.
        case saveVersionLater
        /// The origin serves different bytes per request: keep the mark in
        /// the index and say so once (`EpisodeRules.State.unstableReason`).
        case markUnstable(StitchReason)
        /// Drop the kernel's pages of the episode (a new version), or only
        /// its attributes (a size learned for the same bytes).
        case invalidateKernel(pages: Bool)

        // MARK: The log

        case logChanged
        /// The variant's pinned link stopped working and the enclosure led
        /// to another variant: `dropped` cached bytes of the old one went.
        case logVariantGone(dropped: Int64)
        /// A stream from byte 0 replaced `dropped` cached bytes that no
        /// validator showed to be one version (`EpisodeRules.State.noValidator`).
        case logUnproven(dropped: Int64)
        /// A final episode was kept though its host now serves another
        /// variant (`EpisodeRules.State.keepFinal`).
        case logKeptFinal
        case logIgnoresRange
    }

    /// What an event that may change the version does: `durable` first,
    /// under the index lock, stopping at the first failure (bytes the index
    /// may still list are never freed, guarantee 1; the episode then stops,
    /// `stepsFailed`), then `then`.
    public struct Transition: Sendable {
        public internal(set) var durable: [Effect] = []
        public internal(set) var then: [Effect] = []
    }
}
