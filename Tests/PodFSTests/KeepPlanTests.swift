import RangeCache
import Testing

@testable import PodFS
@testable import ReadRules

/// Which episodes a mount keeps offline (docs/DESIGN.md, "Offline by
/// policy"): the newest N per show, the show's own N, pins, and the cap.
@Suite struct KeepPlanTests {
    /// A show of `count` episodes, one a day, listed oldest first; each
    /// 10 bytes. Keys are "<show>-<day>".
    private func show(_ name: String, count: Int, size: Int64 = 10) -> KeepPlan.Show {
        KeepPlan.Show(
            identity: name,
            episodes: (1...count).map { KeepPlan.Candidate(key: "\(name)-\($0)", date: Int64($0) * 86_400, size: size) })
    }

    @Test func theNewestNOfEachShowAreKeptNewestFirst() {
        let plan = KeepPlan(shows: [show("a", count: 5), show("b", count: 2)], mountLatest: 3, settings: KeepSettings(), cap: nil)
        #expect(Set(plan.kept.keys) == ["a-5", "a-4", "a-3", "b-2", "b-1"])
        #expect(plan.kept.values.allSatisfy { $0 == .latest })
        // Newest first across shows; the listing order breaks a tie.
        #expect(plan.order == ["a-5", "a-4", "a-3", "b-2", "b-1"])
        #expect(plan.keptBytes == 50)
        #expect(plan.latest == ["a": 3, "b": 3])
    }

    @Test func theDateDecidesNotTheListingOrder() {
        let shuffled = KeepPlan.Show(
            identity: "s",
            episodes: [
                KeepPlan.Candidate(key: "old", date: 100, size: 1), KeepPlan.Candidate(key: "new", date: 300, size: 1),
                KeepPlan.Candidate(key: "mid", date: 200, size: 1),
            ])
        let plan = KeepPlan(shows: [shuffled], mountLatest: 2, settings: KeepSettings(), cap: nil)
        #expect(plan.order == ["new", "mid"])
    }

    @Test func aShowsOwnNWinsAndZeroKeepsNone() {
        let settings = KeepSettings(showLatest: ["a": 1, "b": 0])
        let plan = KeepPlan(shows: [show("a", count: 5), show("b", count: 5), show("c", count: 5)], mountLatest: 2, settings: settings, cap: nil)
        #expect(Set(plan.kept.keys) == ["a-5", "c-5", "c-4"])
        #expect(plan.latest == ["a": 1, "b": 0, "c": 2])
        // A show's own N also applies when the mount keeps none.
        let none = KeepPlan(shows: [show("a", count: 5)], mountLatest: 0, settings: KeepSettings(showLatest: ["a": 2]), cap: nil)
        #expect(Set(none.kept.keys) == ["a-5", "a-4"])
    }

    @Test func aPinIsKeptWhateverItsAgeAndSaysSo() {
        let settings = KeepSettings(pinned: ["a-1", "a-5"])
        let plan = KeepPlan(shows: [show("a", count: 5)], mountLatest: 2, settings: settings, cap: nil)
        #expect(plan.kept == ["a-1": .pinned, "a-5": .pinned, "a-4": .latest])
        // Pins come first in the download order.
        #expect(plan.order == ["a-5", "a-1", "a-4"])
    }

    @Test func withNoKeepingAndNoPinsNothingIsKept() {
        let plan = KeepPlan(shows: [show("a", count: 5)], mountLatest: 0, settings: KeepSettings(), cap: nil)
        #expect(plan.kept.isEmpty && plan.order.isEmpty && plan.unfit.isEmpty && plan.keptBytes == 0)
    }

    @Test func everyShowsCoverIsKeptAfterTheEpisodes() {
        var a = show("a", count: 3)
        a.cover = KeepPlan.Candidate(key: "a-cover", date: 0, size: 5)
        var b = show("b", count: 3)
        b.cover = KeepPlan.Candidate(key: "b-cover", date: 9 * 86_400, size: 0)
        // With nothing to keep, the covers still are: in the shows' order,
        // whatever their dates.
        let none = KeepPlan(shows: [a, b], mountLatest: 0, settings: KeepSettings(), cap: nil)
        #expect(none.kept == ["a-cover": .cover, "b-cover": .cover])
        #expect(none.order == ["a-cover", "b-cover"])
        #expect(none.keptBytes == 5)
        #expect(!none.keepsEpisodes)
        let plan = KeepPlan(shows: [a, b], mountLatest: 1, settings: KeepSettings(pinned: ["b-1"]), cap: nil)
        #expect(plan.order == ["b-1", "a-3", "b-3", "a-cover", "b-cover"])
        #expect(plan.kept["b-1"] == .pinned && plan.kept["a-3"] == .latest)
        #expect(plan.keepsEpisodes)
        // Two shows naming the same cover keep it once.
        var c = show("c", count: 1)
        c.cover = a.cover
        #expect(KeepPlan(shows: [a, c], mountLatest: 0, settings: KeepSettings(), cap: nil).order == ["a-cover"])
        // A cover larger than any artwork is not kept.
        var big = show("big", count: 1)
        big.cover = KeepPlan.Candidate(key: "big-cover", date: 0, size: KeepPlan.largestCover + 1)
        #expect(KeepPlan(shows: [a, big], mountLatest: 0, settings: KeepSettings(), cap: nil).order == ["a-cover"])
    }

    @Test func aCoverCountsInTheCapAfterTheEpisodes() {
        var a = show("a", count: 2)
        a.cover = KeepPlan.Candidate(key: "a-cover", date: 0, size: 25)
        let plan = KeepPlan(shows: [a], mountLatest: 2, settings: KeepSettings(), cap: 30)
        #expect(plan.kept == ["a-2": .latest, "a-1": .latest])
        #expect(plan.unfit == ["a-cover"])
        #expect(plan.keptBytes == 20)
        let roomy = KeepPlan(shows: [a], mountLatest: 2, settings: KeepSettings(), cap: 45)
        #expect(roomy.kept == ["a-2": .latest, "a-1": .latest, "a-cover": .cover])
    }

    @Test func aCapKeepsPinsThenTheNewestThatFit() {
        // 3 shows x newest 2, 10 bytes each = 60 bytes wanted, a pin of an
        // old one besides; a cap of 35 bytes holds the pin and the two
        // newest days (3 episodes of day 5... ) that fit.
        let settings = KeepSettings(pinned: ["b-1"])
        let plan = KeepPlan(
            shows: [show("a", count: 5), show("b", count: 5), show("c", count: 5)], mountLatest: 2, settings: settings,
            cap: 35)
        #expect(plan.kept["b-1"] == .pinned)
        #expect(plan.keptBytes <= 35)
        #expect(plan.kept.count == 3)
        #expect(Set(plan.kept.keys) == ["b-1", "a-5", "b-5"])
        #expect(plan.unfit == ["c-5", "a-4", "b-4", "c-4"])
    }

    @Test func aBigEpisodeThatDoesNotFitLeavesRoomForSmallerOnes() {
        let shows = [
            KeepPlan.Show(
                identity: "s",
                episodes: [
                    KeepPlan.Candidate(key: "small-old", date: 1, size: 10),
                    KeepPlan.Candidate(key: "big-new", date: 2, size: 100),
                ])
        ]
        let plan = KeepPlan(shows: shows, mountLatest: 2, settings: KeepSettings(), cap: 50)
        #expect(plan.kept == ["small-old": .latest])
        #expect(plan.unfit == ["big-new"])
    }

    @Test func aPinFitsOnlyBesideThePinsWithinTheCap() {
        #expect(KeepPlan.pinFits(size: 10, pinnedBytes: 0, cap: nil))
        #expect(KeepPlan.pinFits(size: 10, pinnedBytes: 20, cap: 30))
        #expect(!KeepPlan.pinFits(size: 11, pinnedBytes: 20, cap: 30))
        #expect(KeepPlan.pinFits(size: .max, pinnedBytes: .max, cap: nil))
        #expect(!KeepPlan.pinFits(size: .max, pinnedBytes: 1, cap: .max - 1))
    }

    @Test func valuesAreReadStrictly() {
        #expect(KeepPlan.parseLatest(Array("3".utf8)) == 3)
        #expect(KeepPlan.parseLatest(Array("0\n".utf8)) == 0)
        #expect(KeepPlan.parseLatest(Array("10000".utf8)) == 10_000)
        for bad in ["", "-1", "+3", " 3", "3 ", "three", "10001", "99999999999999999999", "3.0", "0x3"] {
            #expect(KeepPlan.parseLatest(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(KeepPlan.parsePinned(Array("1".utf8)) == true)
        #expect(KeepPlan.parsePinned(Array("0\n".utf8)) == false)
        for bad in ["", "yes", "2", "11", "true"] {
            #expect(KeepPlan.parsePinned(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    // MARK: - What the last mount kept, while shows are left to build

    /// Built shows as the keeper meets them: each with its episodes' and
    /// extras' keys.
    private let built: [(episodes: [String], extras: [String])] = [
        (episodes: ["a-1", "a-2"], extras: ["a-cover", "a-2.vtt"]),
        (episodes: ["b-1"], extras: []),
    ]

    private func spared(_ lastKept: Set<String>, leftToBuild: Bool) -> Set<String> {
        KeepPlan.stillSpared(lastKept: lastKept, showsLeftToBuild: leftToBuild, builtShows: built) { show in
            show.episodes + show.extras
        }
    }

    @Test func whileShowsAreLeftToBuildTheirKeptFilesStaySparedAndBuiltShowsFilesAreThePlans() {
        // "c-7" is a file of a show not built yet; "a-0" left its built feed.
        let lastKept: Set<String> = ["a-2", "a-2.vtt", "b-1", "c-7", "a-0"]
        #expect(spared(lastKept, leftToBuild: true) == ["c-7", "a-0"])
    }

    @Test func onceEveryShowIsBuiltThePlanAloneDecides() {
        #expect(spared(["a-2", "c-7", "a-0"], leftToBuild: false).isEmpty)
    }

    @Test func nothingKeptLastTimeSparesNothingAndMeetsNoFile() {
        var met = 0
        let result = KeepPlan.stillSpared(lastKept: [], showsLeftToBuild: true, builtShows: built) { show in
            met += 1
            return show.episodes
        }
        #expect(result.isEmpty)
        #expect(met == 0)
    }

    @Test func theWalkStopsOnceEveryKeptKeyIsStruckOff() {
        var met = 0
        let result = KeepPlan.stillSpared(lastKept: ["a-1"], showsLeftToBuild: true, builtShows: built) { show in
            met += 1
            return show.episodes + show.extras
        }
        #expect(result.isEmpty)
        #expect(met == 1)
    }
}
