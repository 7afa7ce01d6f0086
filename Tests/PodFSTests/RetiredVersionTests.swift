import Foundation
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Files open on a replaced version (docs/DESIGN.md, "Files open on a
/// replaced version"): they read what was cached of the version they
/// opened, EIO only for bytes it never had, and never a byte of the new one.
@Suite struct RetiredVersionTests {
    private let mib = ReadBench.mib

    /// 1 MiB of a 10 MiB episode cached in its scratch file; file 1 is
    /// open on it and has read 5 MiB in, where a fetch is on its way.
    private func replacedWhileOpen(handles: [UInt64] = [1]) throws -> (ReadBench, Episode.FileToken, [Episode.State.Effect]) {
        let scratch = Episode.FileToken.fake()
        var bench = ReadBench(length: 10 * mib, present: [0..<mib], handles: handles)
        _ = bench.state.scratchOpened(scratch, generation: 0, fileMissing: false)
        _ = bench.read(1, at: 5 * mib)
        let id = try #require(bench.state.fetches.keys.min())
        let answer = FetchHead(
            status: 206, rangeFirst: 5 * mib, rangeLast: 6 * mib - 1, total: 10 * mib, contentLength: nil,
            etag: "\"v2\"", lastModified: nil, effectiveURL: "http://o/a.mp3")
        let context = Episode.State.HeadContext(now: 5, feedLength: nil, isBackground: false, holdingIndexLock: true)
        let outcome = bench.state.head(
            id: id, answer, start: 5 * mib, last: 6 * mib - 1, total: 10 * mib, context: context)
        #expect(outcome.0 == .accepted)
        return (bench, scratch, outcome.1.durable)
    }

    private static func retired(_ effects: [Episode.State.Effect]) -> [(Range<Int64>, Episode.FileToken?)] {
        effects.compactMap { effect in
            if case .serveFile(_, let range, let file, _) = effect { return (range, file) }
            return nil
        }
    }

    @Test func aFileOpenOnAReplacedVersionReadsWhatItHadAndEIOForTheRest() throws {
        var (bench, scratch, durable) = try replacedWhileOpen()
        #expect(bench.state.generation == 1 && bench.state.present.isEmpty, "the new version has nothing yet")
        // The index forgets first; then the old file gives up its path
        // instead of being punched: an open file still reads it.
        guard durable.count == 3, case .dropIndexRanges = durable[0], case .replace(let old, let length) = durable[1]
        else {
            Issue.record("drop the ranges, then replace the file: \(durable)")
            return
        }
        #expect(old == scratch && length == 10 * mib)
        #expect(!durable.contains { if case .reshape = $0 { true } else { false } }, "no byte it reads is punched")
        #expect(bench.state.scratch == nil && bench.state.replacingScratch)

        let had = Self.retired(bench.read(1, at: 64 * 1024))
        #expect(had.count == 1 && had[0].0 == 64 * 1024..<192 * 1024 && had[0].1 == scratch)
        #expect(bench.state.kernelPagesStale, "the next open of the new version drops the old pages")
        #expect(ReadBench.failed(bench.read(1, at: 5 * mib)) == 1, "bytes it never had")
        #expect(ReadBench.failed(bench.read(1, at: mib - 4096, size: 8192)) == 1, "half of them it never had")
        #expect(ReadBench.fetched(bench.read(1, at: 7 * mib)).isEmpty, "nothing is fetched for the old version")
    }

    @Test func theNewVersionGetsAFileOfItsOwn() throws {
        var (bench, _, _) = try replacedWhileOpen()
        let fresh = Episode.FileToken.fake()
        bench.state.replaced(with: fresh)
        #expect(bench.state.scratch == fresh && !bench.state.replacingScratch)
        // Bytes of the new version are written to that file, never the old.
        let id = try #require(bench.state.fetches.keys.first)
        let target = bench.state.writeTarget(id: id, generation: 1, range: 5 * mib..<5 * mib + 4096, step: 8 * mib)
        #expect(target?.scratch == fresh)
    }

    @Test func aFileThatCouldNotBeSetAsideIsNotKept() throws {
        var (bench, scratch, _) = try replacedWhileOpen()
        #expect(bench.state.keptInPlace(scratch) == 10 * mib, "its old bytes are punched")
        #expect(bench.state.scratch == scratch && !bench.state.replacingScratch && bench.state.retired.isEmpty)
        #expect(ReadBench.failed(bench.read(1, at: 0)) == 1, "the old file reads EIO, as before")
    }

    @Test func aFileOfTheNewVersionEndsTheOldOnesReads() throws {
        var (bench, _, _) = try replacedWhileOpen(handles: [1, 2])
        #expect(Self.retired(bench.read(2, at: 0)).count == 1)
        // The page cache is the episode's: old bytes read into it now could
        // be seen through the newer file.
        // A file opened on the new variant: the origin stitches (a new
        // validator in this mount), so its open streams the episode whole,
        // and that stream's head answers it.
        let opened = bench.open(3)
        let stream = try #require(ReadBench.probes(opened).first)
        bench.head(stream.id, 0..<10 * mib)
        #expect(bench.state.handles[3]?.generation == bench.state.generation)
        #expect(ReadBench.failed(bench.read(2, at: 0)) == 1)
        #expect(Self.retired(bench.read(2, at: 0)).isEmpty)
    }

    @Test func theLastFileOfAReplacedVersionClosingFreesIt() throws {
        var (bench, scratch, _) = try replacedWhileOpen(handles: [1, 2])
        #expect(bench.state.release(handle: 1, now: 0).isEmpty, "file 2 still reads it")
        let freed = bench.state.release(handle: 2, now: 0)
        #expect(freed.count == 1 && freed[0].scratch == scratch)
        #expect(bench.state.retired.isEmpty)
    }

    @Test func withNoFileOpenTheOldBytesArePunchedAsBefore() throws {
        let scratch = Episode.FileToken.fake()
        var bench = ReadBench(length: 10 * mib, present: [0..<mib])
        _ = bench.state.scratchOpened(scratch, generation: 0, fileMissing: false)
        _ = bench.read(1, at: 5 * mib)
        let id = try #require(bench.state.fetches.keys.min())
        // The reader closed its file; then the head shows a new version of 9 MiB.
        _ = bench.state.release(handle: 1, now: bench.now)
        let (verdict, transition) = bench.head(id, 5 * mib..<6 * mib, total: 9 * mib, etag: "\"v2\"")
        #expect(verdict == .accepted && bench.state.generation == 1)
        let state = bench.state
        #expect(state.retired.isEmpty && !state.replacingScratch && state.scratch == scratch)
        let reshaped = transition.durable.compactMap { if case .reshape(let f, let o, let n) = $0 { (f, o, n) } else { nil } }
        guard reshaped.count == 1, case .reshape(let file, let old, let new) = state.freeingOldBytes(old: 10 * mib, new: 9 * mib)
        else {
            Issue.record("punched and resized: \(transition.durable)")
            return
        }
        #expect(reshaped[0].0 == scratch && reshaped[0].1 == 10 * mib && reshaped[0].2 == 9 * mib)
        #expect(file == scratch && old == 10 * mib && new == 9 * mib)
    }

    @Test func anOverlapThatDidNotMatchKeepsTheOldBytesForOpenFilesToo() throws {
        let scratch = Episode.FileToken.fake()
        var bench = ReadBench(length: 10 * mib, etag: nil, lastModified: ReadBench.lastModified, present: [0..<mib])
        _ = bench.state.scratchOpened(scratch, generation: 0, fileMissing: false)
        // A read at 1 MiB: with no ETag, its fetch asks again the 4 KiB
        // before it, to compare; they differ.
        _ = bench.read(1, at: mib)
        let id = try #require(bench.state.fetches.keys.max())
        #expect(bench.state.fetches[id]?.cursor == mib - 4096)
        let broken = bench.state.continuityBroken(id: id)
        let outcome = try #require(broken)
        #expect(outcome.durable.contains { if case .replace(let old, _) = $0 { old == scratch } else { false } })
        #expect(Self.retired(bench.read(1, at: 0)).count == 1, "the file keeps reading the variant it opened")
    }
}
