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

    @Test func aMistypedCommandIsNamedWhateverFollowsIt() {
        let none: (String) -> Bool = { _ in false }
        #expect(CommandTypo.hint(arguments: ["stauts", "--json"], exists: none)?.contains("did you mean 'podfs status'") == true)
        #expect(CommandTypo.hint(arguments: ["subscibe", "--cache-dir", "/c", "http://x/f.xml"], exists: none) != nil)
        // A mount's own words are left to the mount.
        #expect(CommandTypo.hint(arguments: ["mount", "stauts"], exists: none) == nil)
        #expect(CommandTypo.hint(arguments: ["--cache-dir", "stauts"], exists: none) == nil)
        #expect(CommandTypo.hint(arguments: [], exists: none) == nil)
        // A folder of that name is a mount point.
        #expect(CommandTypo.hint(arguments: ["stauts"], exists: { $0 == "stauts" }) == nil)
    }
}
