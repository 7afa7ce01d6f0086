import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// The open, release and settle events: the open's probe, offline opens
/// from the cache (guarantee 5 of docs/DESIGN.md), and who is answered when
/// a fetch ends.
@Suite struct OpenStateTests {
    private let mib = ReadBench.mib
    private let tuning = EpisodeReader.Tuning()

    /// A 10 MiB episode an earlier mount cached (`present`), as this mount
    /// restores it from the index; `validated`: this mount's check of it
    /// was answered at 100 s (monotonic) with the same version.
    private func cached(validated: Bool = false, present: [Range<Int64>] = [0..<10 * ReadBench.mib]) -> Episode.State {
        var state = Episode.State(restoring: EpisodeRecord(
            id: 1, key: "k", url: "http://o/a.mp3", length: 10 * mib, etag: "\"v1\"", lastModified: nil,
            ranges: present))
        guard validated, let check = state.startMountCheck() else { return state }
        let answer = FetchHead(
            status: 206, rangeFirst: check.range.lowerBound, rangeLast: check.range.lowerBound, total: 10 * mib,
            contentLength: 1, etag: "\"v1\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 100, feedLength: nil, isBackground: true, holdingIndexLock: false)
        _ = state.head(
            id: check.id, answer, start: check.range.lowerBound, last: check.range.lowerBound, total: 10 * mib,
            context: context)
        _ = state.bodyArrived(id: check.id, count: 1)
        _ = [UInt8(0)].withUnsafeBytes { byte in
            state.bodyWritten(id: check.id, range: check.range, generation: 0, written: true, bytes: byte, spillLimit: 1)
        }
        _ = state.fetchEnded(id: check.id, error: nil, attempt: 1, tuning: tuning)
        _ = state.fetchSettled(id: check.id, failure: nil, isBackground: true, minimumFetch: tuning.minimumFetch)
        #expect(state.validated && state.validatedAt == 100 && state.fetches.isEmpty, "the check confirmed it and ended")
        return state
    }

    /// The origin's 206 head for `probe`, of a version of `total` bytes
    /// with `etag`, at `now`: as the driver applies it, under the index
    /// lock. Returns what it asks.
    private func answer(
        _ state: inout Episode.State, _ probe: Episode.State.ProbeStart, total: Int64, etag: String = "\"v1\"",
        now: Double
    ) -> [Episode.State.Effect] {
        let last = min(probe.range.upperBound, total) - 1
        let head = FetchHead(
            status: 206, rangeFirst: probe.range.lowerBound, rangeLast: last, total: total,
            contentLength: last + 1 - probe.range.lowerBound, etag: etag, lastModified: nil,
            effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: now, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let (verdict, transition) = state.head(
            id: probe.id, head, start: probe.range.lowerBound, last: last, total: total, context: context)
        #expect(verdict == .accepted)
        return transition.durable + transition.then
    }

    /// A read of file `handle`, as the kernel sends it, at `now`.
    private func read(
        _ state: inout Episode.State, handle: UInt64 = 1, at offset: Int64, size: Int = 128 * 1024, now: Double
    ) -> [Episode.State.Effect] {
        state.read(
            handle: handle, offset: offset, size: size, reply: .fake(),
            context: .init(now: now, wallClock: 0, link: LinkEstimate(), tuning: tuning))
    }

    private func checks(_ effects: [Episode.State.Effect]) -> [Episode.State.ProbeStart] {
        effects.compactMap { if case .check(let probe) = $0 { probe } else { nil } }
    }

    private func probes(_ effects: [Episode.State.Effect]) -> [Episode.State.ProbeStart] {
        effects.compactMap { if case .probe(let probe) = $0 { probe } else { nil } }
    }

    private func answers(_ effects: [Episode.State.Effect]) -> [Episode.OpenAnswer] {
        effects.compactMap { if case .answerOpen(_, let options?) = $0 { options } else { nil } }
    }

    // MARK: - The open's probe

    @Test func aRecentlyConfirmedEpisodeOpensAtOnce() {
        var state = cached(validated: true)
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(answers(effects).map(\.handle) == [1])
        #expect(answers(effects).first?.keepCache == true)
        #expect(probes(effects).isEmpty)
    }

    /// After a version change the kernel's pages are stale until an open it
    /// hears of says `keep_cache` off: an open of the cache's own (the
    /// keeper's, a scan's fetch ahead) must not use that up.
    @Test func anOpenOfTheCachesOwnLeavesTheKernelsStalePagesForTheNextOpen() throws {
        var state = cached(validated: true)
        // An open an hour on is checked, and the check finds a new version.
        let later = 100 + tuning.revalidateAfter + 1
        let opened = state.open(handle: 9, reply: Episode.OpenToken.fake(), now: later, feedLength: nil, tuning: tuning)
        let check = try #require(checks(opened).first)
        let changed = answer(&state, check, total: 10 * mib, etag: "\"v2\"", now: later)
        #expect(changed.contains { if case .invalidateKernel(pages: true) = $0 { true } else { false } })
        #expect(state.generation == 1 && state.kernelPagesStale)
        let own = state.open(
            handle: 1, reply: Episode.OpenToken.fake(), now: later + 1, feedLength: nil, tuning: tuning,
            seenByKernel: false)
        #expect(answers(own).first?.keepCache == false)
        let kernel = state.open(
            handle: 2, reply: Episode.OpenToken.fake(), now: later + 2, feedLength: nil, tuning: tuning)
        #expect(answers(kernel).first?.keepCache == false, "the kernel drops its pages at this open")
        let next = state.open(handle: 3, reply: Episode.OpenToken.fake(), now: later + 3, feedLength: nil, tuning: tuning)
        #expect(answers(next).first?.keepCache == true)
    }

    /// A scanner's open on a remount waits for no round trip: the cached
    /// version answers, the origin is asked in the background.
    @Test func theFirstOpenOfACachedEpisodeOpensAtOnceAndIsCheckedInTheBackground() {
        var state = cached()
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(answers(effects).map(\.handle) == [1])
        guard case .answerOpen = effects.first else {
            Issue.record("the open is answered before the check goes out")
            return
        }
        #expect(probes(effects).isEmpty, "nobody waits for the origin")
        let check = checks(effects)
        #expect(check.count == 1)
        #expect(check.first?.range == 0..<1, "all cached: one byte")
        #expect(check.first?.validator == "\"v1\"")
        #expect(state.handles[1]?.generation == state.generation && state.openWaiters.isEmpty)
        // A second open is answered too, and sends no second check.
        let second = state.open(handle: 2, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(answers(second).map(\.handle) == [2] && checks(second).isEmpty)
        // Head and tail cached (a scanner's): the check asks the first byte
        // not cached.
        var part = cached(present: [0..<mib, 9 * mib..<10 * mib])
        let partial = part.open(handle: 1, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(answers(partial).count == 1 && checks(partial).first?.range == mib..<mib + 1)
        // A listener's part, without the tail: the open waits for the
        // origin, so a variant whose link expired is replaced first.
        var listened = cached(present: [0..<3 * mib])
        let waiting = listened.open(handle: 1, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(answers(waiting).isEmpty && probes(waiting).count == 1)
    }

    @Test func aConfirmationTooOldIsAskedAgain() {
        var state = cached(validated: true)
        let effects = state.open(
            handle: 1, reply: Episode.OpenToken.fake(), now: 100 + tuning.revalidateAfter + 1, feedLength: nil, tuning: tuning)
        #expect(checks(effects).count == 1 && answers(effects).count == 1)
        #expect(!state.validated)
    }

    /// A lapsed confirmation's probe while a fetch is on its way (a
    /// listener's stream an hour on) asks for bytes neither here nor on
    /// their way: each byte crosses the network once.
    @Test func aRevalidatingProbeFetchesNothingAFetchOnItsWayBrings() throws {
        var state = cached(validated: true, present: [0..<mib])
        #expect(answers(state.open(handle: 1, reply: .fake(), now: 101, feedLength: nil, tuning: tuning)).count == 1)
        let onItsWay = ReadBench.fetched(read(&state, at: mib, now: 102))
        let stream = try #require(onItsWay.first, "the uncached read asks for its bytes")
        let late = 100 + tuning.revalidateAfter + 1
        let probe = try #require(probes(state.open(handle: 2, reply: .fake(), now: late, feedLength: nil, tuning: tuning)).first)
        #expect(!probe.range.overlaps(stream), "the probe \(probe.range) asks again for \(stream)")
        #expect(probe.range.lowerBound == stream.upperBound, "the first bytes neither here nor on their way")
    }

    /// After a revalidation probe that failed, the episode is as if never
    /// confirmed: an open joins a fetch whose head has not come (its head
    /// confirms the version) rather than sending a probe of its own.
    @Test func afterAFailedRevalidationAnOpenJoinsAFetchOnItsWay() {
        var state = cached(validated: true, present: [0..<mib])
        let late = 100 + tuning.revalidateAfter + 1
        let first = state.open(handle: 1, reply: .fake(), now: late, feedLength: nil, tuning: tuning)
        let probe = probes(first)
        #expect(probe.count == 1 && answers(first).isEmpty, "a lapsed confirmation asks with a probe of its own")
        let unreachable = FetchError(isTransient: true, isUnreachable: true, message: "no route to host")
        _ = state.fetchEnded(id: probe[0].id, error: unreachable, attempt: 1, tuning: tuning)
        let settled = state.fetchSettled(id: probe[0].id, failure: unreachable, isBackground: false, minimumFetch: 1)
        #expect(answers(settled).map(\.handle) == [1], "offline, it opens from the cache")
        let gap = ReadBench.fetched(read(&state, at: 5 * mib, now: late + 1))
        guard gap.count == 1, let id = state.fetches.keys.max() else {
            Issue.record("the uncached read asks for its bytes")
            return
        }
        let second = state.open(handle: 2, reply: .fake(), now: late + 2, feedLength: nil, tuning: tuning)
        #expect(probes(second).isEmpty && answers(second).isEmpty, "it waits for the head on its way")
        let head = answer(
            &state, Episode.State.ProbeStart(id: id, range: gap[0], validator: nil, url: nil), total: 10 * mib,
            now: late + 3)
        #expect(answers(head).map(\.handle) == [2], "that head confirms the version and answers the open")
    }

    /// A version change whose durable steps failed drops the probe it
    /// planned: the files opened early are settled at once, their reads
    /// made again (and failing, the episode stopped), their `stat`s
    /// answered, so none waits for a probe that will never come.
    @Test func aProbeDroppedByFailedStepsSettlesTheFilesOpenedEarly() {
        var state = Episode.State()
        let opened = state.open(handle: 1, reply: .fake(), now: 0, feedLength: 5 * mib, tuning: tuning)
        guard let probe = probes(opened).first else {
            Issue.record("an uncached episode opens provisionally with a probe")
            return
        }
        #expect(read(&state, at: 0, now: 1).isEmpty, "the early read waits for the probe")
        let statWaits = state.statWaits(.fake())
        #expect(statWaits, "so does a stat of the open file")
        let effects = state.stepsFailed([.dropIndexRanges], then: [.probe(probe)])
        let resumed = effects.compactMap { if case .resume(let reads, let sized) = $0 { (reads, sized) } else { nil } }
        #expect(resumed.count == 1 && resumed.first?.0.count == 1 && resumed.first?.1.count == 1)
        #expect(!state.isProvisional(1) && state.probeID == nil)
        #expect(ReadBench.failed(read(&state, at: 0, now: 2)) == 1, "made again, it fails: the episode is stopped")
    }

    @Test func anUncachedEpisodeOpensAtOnceWhileItsProbeIsOnItsWay() {
        var state = Episode.State()
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: 5 * mib, tuning: tuning)
        #expect(answers(effects).first?.keepCache == false)
        #expect(probes(effects).first?.range == 0..<tuning.minimumFetch)
        #expect(state.isProvisional(1))
        guard case .answerOpen = effects.first else {
            Issue.record("the open is answered before the probe goes out")
            return
        }
        let second = state.open(handle: 2, reply: Episode.OpenToken.fake(), now: 0, feedLength: 5 * mib, tuning: tuning)
        #expect(answers(second).count == 1 && probes(second).isEmpty)
    }

    @Test func withoutAClaimedSizeAnUncachedEpisodeWaitsForItsProbe() {
        var state = Episode.State()
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
        #expect(answers(effects).isEmpty && probes(effects).count == 1)
    }

    @Test func aClaimShownBeforeIsDroppedByTheOpen() {
        // A stat at 200 showed the feed's claim, which the kernel may keep
        // for its timeout of 99 s (and one more).
        var state = Episode.State()
        #expect(state.sizeShown(feedLength: 5 * mib, timeout: 99, now: 200) == (5 * mib, 99))
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 250, feedLength: 5 * mib, tuning: tuning)
        #expect(answers(effects).first?.dropAttributes == true)
        #expect(state.opened)
        // Every open until then drops it, not only the first.
        let second = state.open(handle: 2, reply: Episode.OpenToken.fake(), now: 299, feedLength: 5 * mib, tuning: tuning)
        #expect(answers(second).first?.dropAttributes == true)
        let after = state.open(handle: 3, reply: Episode.OpenToken.fake(), now: 301, feedLength: 5 * mib, tuning: tuning)
        #expect(answers(after).first?.dropAttributes == false)
    }

    @Test func aStatOfAProvisionalFileWaitsForTheProbe() throws {
        var state = Episode.State()
        let alone = state.statWaits(.fake())
        #expect(!alone)
        // Nothing cached: the file opens at once, its probe on its way.
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: 5 * mib, tuning: tuning)
        let probe = try #require(probes(opened).first)
        #expect(state.isProvisional(1))
        let stat = Episode.SizeToken.fake()
        let waits = state.statWaits(stat)
        #expect(waits && state.sizeWaiters == [stat])
        // The probe's head answers it.
        let resumed = answer(&state, probe, total: 5 * mib, now: 1).compactMap { effect in
            if case .resume(_, let sized) = effect { sized } else { nil }
        }
        #expect(resumed == [[stat]] && state.sizeWaiters.isEmpty)
    }

    @Test func aMountCheckAsksForTheFirstByteNotCached() {
        var state = cached(present: [0..<mib])
        #expect(state.startMountCheck()?.range == mib..<mib + 1)
        #expect(state.startMountCheck() == nil, "one check at a time")
    }

    /// An episode whose feed gives no length: its first byte is asked for
    /// before anything opens it; the head's length is the size a `stat`
    /// shows, the kernel's copy dropped. No byte is kept, the version is
    /// not confirmed and the link not pinned: the first open asks with a
    /// probe of its own, whose response is the first with bytes.
    @Test func aSizeCheckTellsTheLengthAndKeepsNoByte() throws {
        var state = Episode.State()
        #expect(state.sizeShown(feedLength: nil, timeout: 30, now: 0).size == 0)
        let started = state.startSizeCheck()
        let check = try #require(started)
        #expect(check.range == 0..<1)
        #expect(state.startSizeCheck() == nil, "one check at a time")
        let (_, transition) = state.head(
            id: check.id, sizeHead(total: 5 * mib, at: "http://cdn/signed?exp=1"), start: 0, last: 0,
            total: 5 * mib, context: sizeContext(now: 10))
        #expect(
            transition.then.contains { if case .invalidateKernel = $0 { true } else { false } },
            "the kernel's size 0 is dropped")
        #expect(transition.then.contains { if case .endAfterHead = $0 { true } else { false } }, "no byte wanted")
        #expect(state.sizeShown(feedLength: nil, timeout: 30, now: 10) == (5 * mib, 30))
        #expect(!state.validated, "not confirmed")
        #expect(state.effectiveURL == nil, "the signed link is not pinned")
        _ = state.fetchEnded(id: check.id, error: nil, attempt: 1, tuning: tuning)
        _ = state.fetchSettled(id: check.id, failure: nil, isBackground: true, minimumFetch: tuning.minimumFetch)
        #expect(state.fetches.isEmpty && state.present.isEmpty)
        #expect(state.startSizeCheck() == nil, "its size is known: never asked again")
        // Opened soon after, it asks with a probe of its own from byte 0.
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 20, feedLength: nil, tuning: tuning)
        #expect(answers(opened).isEmpty)
        #expect(probes(opened).first?.range.lowerBound == 0 && probes(opened).first?.validator == "\"v1\"")
    }

    /// An open that came while a size check was on its way waits for its
    /// head, as for any probe, and the check brings its byte for it.
    @Test func anOpenThatJoinedASizeCheckGetsItsByte() throws {
        var state = Episode.State()
        let started = state.startSizeCheck()
        let check = try #require(started)
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 5, feedLength: nil, tuning: tuning)
        #expect(answers(opened).isEmpty && probes(opened).isEmpty, "it waits for the check's head")
        let (_, transition) = state.head(
            id: check.id, sizeHead(total: 5 * mib), start: 0, last: 0, total: 5 * mib, context: sizeContext(now: 10))
        #expect(!transition.then.contains { if case .endAfterHead = $0 { true } else { false } })
        #expect(state.fetches[check.id]?.upper == 1, "its byte is wanted")
        #expect(answers(transition.then).map(\.handle) == [1], "the open is answered")
        #expect(state.validated)
    }

    /// A size check that fails is not retried (the sizer asks again in its
    /// turn); an open waiting for it gets a probe of its own.
    @Test func aFailedSizeCheckIsNotRetriedAndAnOpenWaitingForItAsksItself() throws {
        var state = Episode.State()
        let started = state.startSizeCheck()
        let check = try #require(started)
        _ = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 5, feedLength: nil, tuning: tuning)
        let reset = FetchError(isTransient: true, isUnreachable: false, message: "connection reset")
        let (ended, _) = state.fetchEnded(id: check.id, error: reset, attempt: 1, tuning: tuning)
        guard case .settle = ended else {
            Issue.record("a size check is not retried: \(ended)")
            return
        }
        let settled = state.fetchSettled(id: check.id, failure: reset, isBackground: true, minimumFetch: tuning.minimumFetch)
        #expect(probes(settled).first?.range.lowerBound == 0, "the open's own probe: \(settled)")
        #expect(state.length == nil)
    }

    private func sizeHead(total: Int64, at url: String = "http://o/a.mp3") -> FetchHead {
        FetchHead(
            status: 206, rangeFirst: 0, rangeLast: 0, total: total, contentLength: 1, etag: "\"v1\"",
            lastModified: nil, effectiveURL: url)
    }

    private func sizeContext(now: Double) -> Episode.State.HeadContext {
        Episode.State.HeadContext(now: now, feedLength: nil, isBackground: true, holdingIndexLock: true)
    }

    /// Nothing is asked of an episode whose size an open is already
    /// asking, and a check that failed leaves it unsized, to ask again.
    @Test func aSizeCheckWaitsForNothingElseAndAFailedOneLeavesItUnsized() throws {
        var state = Episode.State()
        _ = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
        #expect(state.startSizeCheck() == nil, "an open's probe tells the size")

        var unsized = Episode.State()
        let started = unsized.startSizeCheck()
        let check = try #require(started)
        let refused = FetchError(isTransient: false, isUnreachable: false, message: "HTTP 403")
        _ = unsized.fetchEnded(id: check.id, error: refused, attempt: 1, tuning: tuning)
        _ = unsized.fetchSettled(id: check.id, failure: refused, isBackground: true, minimumFetch: tuning.minimumFetch)
        #expect(unsized.length == nil && unsized.fetches.isEmpty)
        #expect(unsized.startSizeCheck()?.range == 0..<1)
    }

    // MARK: - Release

    @Test func aClosingStreamerLeavesItsPlace() {
        var state = cached(validated: true)
        _ = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 200, feedLength: nil, tuning: tuning)
        // It reads on in order up to 5 MiB: five reads, a streak of four.
        for step: Int64 in 1...5 {
            _ = read(&state, at: 5 * mib - (6 - step) * 128 * 1024, now: 200)
        }
        #expect(state.handles[1]?.nextOffset == 5 * mib && state.handles[1]?.streak == 4)
        _ = state.release(handle: 1, now: 50)
        #expect(state.lastStream?.end == 5 * mib && state.lastStream?.streak == 4)
        #expect(state.handles.isEmpty)
    }

    // MARK: - Guarantee 5: offline

    @Test func offlineACachedEpisodeOpensFromTheCache() {
        var state = cached()
        let open = Episode.OpenToken.fake()
        let effects = state.open(handle: 1, reply: open, now: 0, feedLength: nil, tuning: tuning)
        #expect(answers(effects).map(\.handle) == [1], "answered before the origin could say anything")
        let check = checks(effects)[0]
        let unreachable = FetchError(isTransient: true, isUnreachable: true, message: "no route to host")
        guard case .settle = state.fetchEnded(id: check.id, error: unreachable, attempt: 1, tuning: tuning).0 else {
            Issue.record("offline, a cached episode is not retried")
            return
        }
        let settled = state.fetchSettled(id: check.id, failure: unreachable, isBackground: true, minimumFetch: 1)
        #expect(!settled.contains { if case .answerOpen = $0 { true } else { false } })
        // Its reads are served from the cache, with no fetch.
        let cachedRead = read(&state, at: 3 * mib, size: 4096, now: 1)
        #expect(ReadBench.served(cachedRead) == [3 * mib..<3 * mib + 4096])
        #expect(ReadBench.fetched(cachedRead).isEmpty)
    }

    @Test func offlineUncachedBytesFail() {
        // Opened from the cache when the origin could not be reached.
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], confirmed: false)
        #expect(!bench.state.validated && bench.state.handles[1] != nil)
        let reply = Episode.ReadToken.fake()
        let read = bench.read(at: 5 * mib, size: 4096, reply: reply)
        let id = ReadBench.fetched(read).isEmpty ? 0 : bench.state.fetches.keys.min()!
        let unreachable = FetchError(isTransient: true, isUnreachable: true, message: "no route to host")
        for fetch in bench.state.fetches.keys.sorted() {
            _ = bench.state.fetchEnded(id: fetch, error: unreachable, attempt: 1, tuning: tuning)
        }
        let settled = bench.state.fetchSettled(id: id, failure: unreachable, isBackground: false, minimumFetch: 1)
        let failed = settled.filter { if case .fail = $0 { true } else { false } }
        #expect(failed.count == 1)
        #expect(bench.state.waiters.isEmpty)
    }

    /// The background check finds the episode gone (410): the file opened
    /// on the cache reads what is cached; only its other bytes would fail.
    @Test func aCheckThatFindsTheEpisodeGoneLeavesTheCachedBytesReadable() {
        var state = cached(present: [0..<mib, 9 * mib..<10 * mib])
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
        #expect(answers(effects).map(\.handle) == [1])
        let id = checks(effects)[0].id
        let gone = OriginAnswer(status: 410, retryAfter: nil, now: 0).failure(status: 410, url: "http://o/a")
        _ = state.fetchEnded(id: id, error: gone, attempt: 1, tuning: tuning)
        let settled = state.fetchSettled(id: id, failure: gone, isBackground: true, minimumFetch: 1)
        #expect(!settled.contains { if case .answerOpen = $0 { true } else { false } })
        #expect(!settled.contains { if case .fail = $0 { true } else { false } })
        #expect(ReadBench.served(read(&state, at: 4096, size: 4096, now: 1)) == [4096..<8192])
    }

    /// An open during a mount's check needs no probe of its own: it is
    /// answered from the cache, and the check asks for both.
    @Test func anOpenDuringAMountsCheckIsAnsweredAtOnce() {
        var state = cached()
        _ = state.startMountCheck()!
        let effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
        #expect(answers(effects).map(\.handle) == [1])
        #expect(checks(effects).isEmpty && probes(effects).isEmpty)
        #expect(state.openWaiters.isEmpty)
    }

    @Test(arguments: [408, 429, 500, 503])
    func anOriginBusyForEveryAttemptLeavesACachedEpisodeReadable(status: Int) {
        // The mount's check, or the open's own: either way the file opened
        // on the cache, and the origin said nothing of the episode changing.
        for background in [true, false] {
            var state = cached(present: [0..<mib, 9 * mib..<10 * mib])
            let id: UInt64
            let effects: [Episode.State.Effect]
            if background {
                id = state.startMountCheck()!.id
                effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
            } else {
                effects = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 0, feedLength: nil, tuning: tuning)
                id = checks(effects)[0].id
            }
            #expect(answers(effects).map(\.handle) == [1])
            let busy = OriginAnswer(status: status, retryAfter: nil, now: 0).failure(status: status, url: "http://o/a")
            guard case .settle = state.fetchEnded(id: id, error: busy, attempt: tuning.attempts, tuning: tuning).0 else {
                Issue.record("the last attempt is not retried")
                continue
            }
            let settled = state.fetchSettled(id: id, failure: busy, isBackground: true, minimumFetch: 1)
            #expect(!settled.contains { if case .probe = $0 { true } else { false } })
            #expect(!settled.contains { if case .fail = $0 { true } else { false } })
            // Its cached bytes are served.
            #expect(ReadBench.served(read(&state, at: 4096, size: 4096, now: 1)) == [4096..<8192])
        }
    }

    // MARK: - Guarantee 4: the size a stat shows

    @Test func theFeedsClaimIsKeptUntilTheFirstOpenThenAskedAgain() {
        var state = Episode.State()
        #expect(state.sizeShown(feedLength: 500, timeout: 10, now: 0) == (500, 10))
        #expect(state.claimKeptUntil == 11)
        let opened = state.open(handle: 1, reply: Episode.OpenToken.fake(), now: 5, feedLength: 500, tuning: tuning)
        #expect(state.sizeShown(feedLength: 500, timeout: 10, now: 6) == (500, 0))
        // The open's probe is answered: the episode has 700 bytes.
        if let probe = probes(opened).first { _ = answer(&state, probe, total: 700, now: 7) }
        #expect(state.sizeShown(feedLength: 500, timeout: 10, now: 7) == (700, 10))
    }

    // MARK: - Eviction

    @Test func anOpenOpeningOrDownloadingEpisodeIsNeverEvicted() throws {
        var state = cached(validated: true)
        _ = state.open(handle: 1, reply: .fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(!state.mayEvict, "open")
        _ = state.release(handle: 1, now: 201)
        #expect(state.mayEvict)
        // An open of an episode not cached, its probe on its way.
        var fresh = Episode.State()
        let effects = fresh.open(handle: 2, reply: .fake(), now: 200, feedLength: nil, tuning: tuning)
        #expect(!probes(effects).isEmpty && !fresh.mayEvict, "opening")
        // Until the driver says the index and the file forgot them, the
        // bytes stay (a failed drop keeps what is cached).
        #expect(state.present.count == 10 * mib)
        var idle = cached(validated: true)
        idle.evicted()
        #expect(idle.present.isEmpty && !idle.unsaved.contains(.ranges) && idle.scratch == nil)
    }
}
