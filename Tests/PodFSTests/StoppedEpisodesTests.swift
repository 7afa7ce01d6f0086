import Testing

@testable import PodFS

/// When the durable steps of a stopped episode are tried again
/// (`StoppedEpisodes`): a timer of their own, 1 s, then twice as long each
/// time, at most 30 s; one timer at a time; none after the reader stopped.
@Suite struct StoppedEpisodesTests {
    private func episode() -> Episode {
        Episode(
            inode: 7, parent: 1, key: "k7", url: "http://o/7.mp3", guid: nil, name: "7.mp3", modificationTime: 0,
            feedLength: nil, record: nil)
    }

    @Test func theTriesComeSoonThenLessAndLessOftenOneTimerAtATime() {
        let stopped = StoppedEpisodes()
        #expect(stopped.timerToSet() == nil, "nothing waits: no timer")
        let episode = episode()
        var delays: [Double] = []
        for _ in 0..<7 {
            stopped.mark(episode)
            guard let delay = stopped.timerToSet() else {
                Issue.record("a stopped episode gets a timer")
                return
            }
            delays.append(delay)
            #expect(stopped.timerToSet() == nil, "one timer at a time")
            #expect(stopped.timerFired())
            // The try fails again: the episode is marked again.
            #expect(stopped.takeAll().count == 1)
        }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30])
    }

    @Test func aTryThatSucceedsStartsTheDelaysOverAndAStoppedReaderSetsNone() {
        let stopped = StoppedEpisodes()
        let episode = episode()
        stopped.mark(episode)
        #expect(stopped.timerToSet() == 1)
        #expect(stopped.timerFired())
        stopped.mark(episode)
        #expect(stopped.timerToSet() == 2)
        #expect(stopped.timerFired())
        _ = stopped.takeAll()
        stopped.allDone()
        stopped.mark(episode)
        #expect(stopped.timerToSet() == 1, "done, then stopped again: soon again")
        stopped.close()
        #expect(!stopped.timerFired(), "a timer that fires after the reader stopped tries nothing")
        #expect(stopped.timerToSet() == nil)
    }
}
