import Foundation
import PodFS
import Testing

/// What `podfs status` reads: pending feeds, and a file written a few
/// times per round rather than once per feed.
@Suite struct FeedStatusStoreTests {
    @Test func pendingKeepsTheLastAnswerUntilTheNextOneAndFlushWritesWhatWasLeft() throws {
        let directory = NSTemporaryDirectory() + "podfs-status-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FeedStatusStore(directory: directory)
        store.record(url: "a", ok: true, detail: "updated", at: 10)
        store.markPending(urls: ["a", "b"], at: 20)
        var onDisk = FeedStatusStore.read(directory: directory)
        #expect(onDisk["a"] == FeedStatusStore.Record(checkedAt: 10, ok: true, detail: "updated", pending: true))
        #expect(onDisk["b"]?.pending == true && onDisk["b"]?.ok == false)
        // Within the write interval the record waits in memory for flush.
        store.record(url: "b", ok: false, detail: "HTTP 404", at: 21)
        #expect(store.record(url: "b")?.pending == nil)
        store.flush()
        onDisk = FeedStatusStore.read(directory: directory)
        #expect(onDisk["b"] == FeedStatusStore.Record(checkedAt: 21, ok: false, detail: "HTTP 404"))
        #expect(FeedStatusStore(directory: directory).record(url: "a")?.pending == true, "read back by the next mount")
    }
}
