import Foundation
import FUSEBridge
import Locking
import Logging
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// A reader waiting at the start of a response is answered as soon as its
/// bytes are in hand, not when libcurl's batch ends: on a fast link the
/// batch holds the whole probe (docs/DESIGN.md, "Body"). The source here is
/// driven by hand, so the batch never ends while the test looks.
@Suite struct FirstBytesTests {
    /// Records each fetch's sink; the test feeds it.
    private final class HandFedSource: RangeSource {
        let sinks = Locked<[(range: Range<Int64>, sink: any FetchSink)]>([])

        func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
            sinks.withLock { $0.append((range, sink)) }
        }
    }

    private final class OpenAnswer: OpenReplying {
        let handle = Locked<UInt64?>(nil)
        func opened(_ options: OpenOptions) { handle.withLock { $0 = options.handle } }
        func fail(_ error: FileSystemError) { Issue.record("the open failed: \(error)") }
    }

    private final class ReadAnswer: DataReplying {
        let bytes = Locked<[UInt8]?>(nil)
        func data(_ bytes: UnsafeRawBufferPointer) { self.bytes.withLock { $0 = Array(bytes) } }
        func file(descriptor: Int32, offset: Int64, count: Int) -> Bool {
            var buffer = [UInt8](repeating: 0, count: count)
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            bytes.withLock { $0 = Array(buffer.prefix(max(0, got))) }
            return true
        }
        func fail(_ error: FileSystemError) { Issue.record("the read failed: \(error)") }
    }

    /// Polls until `done` or 10 s (a stuck reply fails, it does not hang).
    private func eventually(_ done: () -> Bool) -> Bool {
        for _ in 0..<1_000 {
            if done() { return true }
            usleep(10_000)
        }
        return done()
    }

    @Test func aReadAtTheProbesStartIsAnsweredBeforeTheBatchEnds() throws {
        let scratch = try TemporaryIndex("first")
        defer { scratch.remove() }
        let (index, logger) = (scratch.index, scratch.logger)
        let url = "http://o/a.mp3"
        let length: Int64 = 4 * 1024 * 1024
        _ = try index.register(feeds: [(feedURL: "http://o/feed.xml", episodes: [("k", url)])])
        let record = try #require(try index.episode(key: "k"))
        let episode = Episode(
            inode: 7, parent: 1, key: "k", url: url, guid: nil, name: "a.mp3", modificationTime: 0,
            feedLength: length, record: record)
        let source = HandFedSource()
        let reader = EpisodeReader(index: index, source: source, logger: logger)
        reader.adopt([episode])
        defer { reader.flush() }

        let open = OpenAnswer()
        reader.open(episode, reply: open)
        let (probe, sink) = try #require(source.sinks.withLock { $0.first }, "an open of nothing cached probes")
        let body = (0..<Int(probe.count)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let head = FetchHead(
            status: 206, rangeFirst: probe.lowerBound, rangeLast: probe.upperBound - 1, total: length,
            contentLength: probe.upperBound - probe.lowerBound, etag: "\"v1\"", lastModified: nil, effectiveURL: url)
        #expect(sink.receive(head: head))
        let handle = try #require(eventually { open.handle.withLock { $0 } != nil } ? open.handle.withLock { $0 } : nil)

        let read = ReadAnswer()
        reader.read(episode, handle: handle, offset: 0, size: 4096, reply: read)
        #expect(read.bytes.withLock { $0 } == nil, "nothing has arrived")
        // The first 16 KiB of the probe, in one of libcurl's hand-overs;
        // the rest of the batch is still to come.
        #expect(body[0..<16_384].withUnsafeBytes { sink.receive(body: $0) })
        #expect(eventually { read.bytes.withLock { $0 } != nil }, "answered before the batch ended")
        let answered = read.bytes.withLock { $0 }
        #expect(answered.map { $0 == Array(body[0..<4096]) } != false, "with the probe's first 4 KiB")

        #expect(body[16_384...].withUnsafeBytes { sink.receive(body: $0) })
        sink.bodyBatchEnded()
        sink.complete(error: nil)
        _ = reader.release(episode, handle: handle)
    }
}
