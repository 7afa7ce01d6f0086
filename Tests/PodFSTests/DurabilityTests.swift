import Foundation
import Logging
import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// `Durability`'s retry of a stopped episode's durable steps: by a timer
/// of its own, not only by the flush pass, so an episode stopped under a
/// long `--commit-interval` reads again in seconds (docs/DESIGN.md, "A
/// durable step that fails").
@Suite struct DurabilityTests {
    @Test func aStoppedEpisodesStepsAreTriedAgainByTheTimerWithoutAFlushThread() throws {
        let scratch = try TemporaryIndex("durability")
        defer { scratch.remove() }
        let (index, logger) = (scratch.index, scratch.logger)
        let durability = Durability(index: index, disk: DiskSpace(directory: index.directory), logger: logger)
        let episode = Episode(
            inode: 7, parent: 1, key: "k7", url: "http://o/7.mp3", guid: nil, name: "7.mp3", modificationTime: 0,
            feedLength: nil, record: nil)
        _ = episode.state.withLock { $0.stepsFailed([.dropIndexRanges], then: []) }
        durability.retryLater(episode)
        #expect(episode.state.withLock(\.stepsUnfinished), "stopped until the timer fires")
        let deadline = Date().addingTimeInterval(5)
        while episode.state.withLock(\.stepsUnfinished), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!episode.state.withLock(\.stepsUnfinished), "the timer tried the steps, and they were done")
    }
}
