import Testing

@testable import podfs

/// A mistyped command is named with the command it was meant to be, rather
/// than read as a mount point; paths, URLs and far words are left alone.
@Suite struct CommandTypoTests {
    @Test func nearWordsSuggestTheirCommand() {
        #expect(CommandTypo.suggestion(for: "stauts") == "status")
        #expect(CommandTypo.suggestion(for: "subscibe") == "subscribe")
        #expect(CommandTypo.suggestion(for: "unmout") == "unmount")
        #expect(CommandTypo.suggestion(for: "Prefetsh") == "prefetch")
        #expect(CommandTypo.suggestion(for: "subscription") == "subscriptions")
    }

    @Test func pathsURLsAndOtherWordsAreNotCommands() {
        for word in ["status", "Podcasts", "mnt", "feeds.opml", "./stauts", "http://x/feed.xml", "my-shows", "st"] {
            #expect(CommandTypo.suggestion(for: word) == nil, "\(word)")
        }
        #expect(CommandTypo.distance(Array("ab"), Array("ba")) == 1)
        #expect(CommandTypo.distance(Array(""), Array("abc")) == 3)
    }
}
