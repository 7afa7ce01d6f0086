import Testing

@testable import PodFS
@testable import ReadRules

/// A folder's time changes whenever its listing changes (docs/DESIGN.md,
/// "What a mount shows"): scanners skip folders whose time stayed.
@Suite struct FolderTimeTests {
    private let listing = Catalog.listingSignature(["2026-11-01 A.mp3", "2026-11-02 B.mp3", "Show.m3u"])

    @Test func aNewShowShowsItsFeedsTime() {
        #expect(Catalog.folderTime(feedTime: 500, listing: listing, before: nil, now: 9000) == 500)
    }

    @Test func aNewerEpisodeMovesTheTimeToItsDate() {
        let more = Catalog.listingSignature(["2026-11-01 A.mp3", "2026-11-02 B.mp3", "2026-11-03 C.mp3", "Show.m3u"])
        #expect(Catalog.folderTime(feedTime: 600, listing: more, before: (500, listing), now: 9000) == 600)
    }

    @Test func aBackFilledOrRemovedEpisodeMovesTheTimeToNow() {
        let backFilled = Catalog.listingSignature(["2020-01-01 Old.mp3", "2026-11-01 A.mp3", "2026-11-02 B.mp3", "Show.m3u"])
        #expect(Catalog.folderTime(feedTime: 500, listing: backFilled, before: (500, listing), now: 9000) == 9000)
        let removed = Catalog.listingSignature(["2026-11-02 B.mp3", "Show.m3u"])
        #expect(Catalog.folderTime(feedTime: 500, listing: removed, before: (500, listing), now: 9000) == 9000)
        // A clock behind the time shown still moves it.
        #expect(Catalog.folderTime(feedTime: 500, listing: removed, before: (9500, listing), now: 9000) == 9501)
    }

    @Test func anUnchangedListingKeepsTheTimeShownBeforeAMovedOneIncluded() {
        #expect(Catalog.folderTime(feedTime: 500, listing: listing, before: (9000, listing), now: 12000) == 9000)
        // A list an earlier podfs saved has no listing: its time is kept.
        #expect(Catalog.folderTime(feedTime: 500, listing: listing, before: (700, nil), now: 12000) == 700)
    }

    @Test func theSignatureIsTheListingsNotItsOrder() {
        #expect(Catalog.listingSignature(["b", "a"]) == Catalog.listingSignature(["a", "b"]))
        #expect(Catalog.listingSignature(["ab"]) != Catalog.listingSignature(["a", "b"]))
        #expect(Catalog.listingSignature(["a"]) == 0x089b_e207_b544_f1e4, "FNV-1a: the same in every process")
    }
}
