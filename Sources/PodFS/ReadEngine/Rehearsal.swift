import Foundation
import FUSEBridge
import Locking
public import Logging
import RangeCache
import ReadRules

/// One cold open and first read, played once at mount through a reader of
/// its own, so the listener's first open does not pay for code run for the
/// first time in this process.
///
/// The Swift runtime builds a generic type's metadata the first time a
/// process needs it, and keeps it; the first open and read of a mount paid
/// for that (docs/DESIGN.md, "The first open of a process"). The rehearsal
/// runs the reader's real code on a throwaway episode: a cache index and
/// scratch file of its own in the directory it is given, a source that answers
/// from memory, replies that go nowhere; and the scan-ahead's pattern sees
/// the open and the close. It shares nothing with the mount's reader (no
/// index, no kernel session, no network) and removes its directory when
/// done.
public enum Rehearsal {
    /// Plays the rehearsal under `directory` (made, then removed); returns
    /// whether the read was answered with the bytes the source sent.
    @discardableResult
    public static func run(in directory: String, logger: Logger) -> Bool {
        var quiet = logger
        quiet.logLevel = .critical
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            return try play(in: directory, logger: quiet)
        } catch {
            return false
        }
    }

    // MARK: - Private

    private static let url = "http://rehearsal.invalid/episode.mp3"
    private static let length: Int64 = 1 << 20

    private static func play(in directory: String, logger: Logger) throws -> Bool {
        let index = try CacheIndex(directory: directory, logger: logger)
        let records = try index.register(feeds: [(feedURL: "http://rehearsal.invalid/feed.xml", episodes: [("k", url)])])
        let episode = Episode(
            inode: 2, parent: 1, key: "k", url: url, guid: nil, name: "episode.mp3", modificationTime: 0,
            feedLength: length, record: records.first?.records.first)
        let source = Source()
        let reader = EpisodeReader(index: index, source: source, logger: logger)
        defer { reader.drainWriters() }
        reader.adopt([episode])

        let open = Answer()
        reader.open(episode, reply: open)
        guard let (range, sink) = source.fetches.withLock({ $0.first }) else { return false }
        let body = [UInt8](repeating: 0x5A, count: Int(range.count))
        let head = FetchHead(
            status: 206, rangeFirst: range.lowerBound, rangeLast: range.upperBound - 1, total: length,
            contentLength: range.upperBound - range.lowerBound, etag: "\"r\"", lastModified: nil,
            effectiveURL: url)
        guard sink.receive(head: head), let handle = wait(for: { open.handle.withLock { $0 } }) else { return false }

        // The first read, answered from the bytes as they arrive; the
        // second from the scratch file.
        let first = Answer()
        reader.read(episode, handle: handle, offset: 0, size: 4096, reply: first)
        let fed = body.withUnsafeBytes { sink.receive(body: $0) }
        sink.bodyBatchEnded()
        sink.complete(error: nil)
        let answered = wait(for: { first.bytes.withLock { $0 } })
        reader.drainWriters()
        let second = Answer()
        reader.read(episode, handle: handle, offset: 4096, size: 4096, reply: second)
        let again = wait(for: { second.bytes.withLock { $0 } })
        let extent = reader.release(episode, handle: handle)
        // What the mount's scan-ahead makes of the open and the close.
        var pattern = ScanPattern()
        _ = pattern.opened(handle: handle, file: ScanPattern.File(folder: 1, position: 0, count: 2), now: 0)
        if let extent { _ = pattern.released(handle: handle, extent: extent, now: 0.1) }
        return fed && answered == Array(body[0..<4096]) && again == Array(body[4096..<8192])
    }

    /// Polls `value` for up to a second.
    private static func wait<T>(for value: () -> T?) -> T? {
        for _ in 0..<1_000 {
            if let value = value() { return value }
            usleep(1_000)
        }
        return value()
    }

    /// Keeps each fetch's sink; the rehearsal feeds it.
    private final class Source: RangeSource {
        let fetches = Locked<[(range: Range<Int64>, sink: any FetchSink)]>([])

        func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
            fetches.withLock { $0.append((range, sink)) }
        }
    }

    /// An open's and a read's reply that keeps the answer.
    private final class Answer: OpenReplying, DataReplying {
        let handle = Locked<UInt64?>(nil)
        let bytes = Locked<[UInt8]?>(nil)

        func opened(_ options: OpenOptions) {
            handle.withLock { $0 = options.handle }
        }

        func data(_ bytes: UnsafeRawBufferPointer) {
            self.bytes.withLock { $0 = Array(bytes) }
        }

        func file(descriptor: Int32, offset: Int64, count: Int) -> Bool {
            var buffer = [UInt8](repeating: 0, count: count)
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            bytes.withLock { $0 = Array(buffer.prefix(max(0, got))) }
            return true
        }

        func fail(_ error: FileSystemError) {
            bytes.withLock { $0 = [] }
        }
    }
}
