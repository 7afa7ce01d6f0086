@testable import PodFS
import Testing

@testable import podfs

/// `podfs status`'s lines on what is kept offline (`CacheReport.keepingText`).
@Suite struct KeepingTextTests {
    private func report(mountLatest: Int, showLatest: Int) -> Keeper.Report {
        Keeper.Report(
            keepLatest: mountLatest, keptBytes: 30_000_000, capBytes: nil,
            shows: [
                Keeper.Report.Show(
                    title: "Some Show", keepLatest: showLatest, kept: 3, complete: 1, pinned: [], unfit: [])
            ],
            downloading: [], keptKeys: [], keptCovers: nil, covers: nil, coversComplete: nil)
    }

    @Test func theMountsOwnNumberHeadsTheList() {
        let text = CacheReport.keepingText(report(mountLatest: 2, showLatest: 3))
        #expect(text.hasPrefix("Kept offline: newest 2 per show, 28.6 MiB when complete\n"), "\(text)")
        #expect(text.contains("  Some Show: newest 3, 1 of 3 complete"), "\(text)")
    }

    /// A mount that keeps none by default and a show that keeps its own:
    /// the header does not say "newest 0", as if nothing were kept.
    @Test func aMountThatKeepsNoneByDefaultSaysEachShowSetsIt() {
        let text = CacheReport.keepingText(report(mountLatest: 0, showLatest: 3))
        #expect(!text.contains("newest 0"), "\(text)")
        #expect(text.hasPrefix("Kept offline, as each show sets it, 28.6 MiB when complete\n"), "\(text)")
    }
}
