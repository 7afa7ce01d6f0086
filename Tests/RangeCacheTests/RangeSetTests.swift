import RangeCache
import Testing

/// `RangeSet` keeps sorted, disjoint, non-adjacent ranges and answers
/// coverage questions without overflowing at either end of `Int64`.
@Suite struct RangeSetTests {
    // MARK: - Nested types

    /// SplitMix64: a tiny deterministic generator, so the randomized test
    /// replays the same operations on every run and every machine.
    private struct SplitMix64: RandomNumberGenerator {
        private var state: UInt64

        init(seed: UInt64) {
            state = seed
        }

        mutating func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
    }

    // MARK: - Private properties

    private static let max = Int64.max

    // MARK: - Insert

    @Test func emptySetCoversNothing() {
        let set = RangeSet()
        #expect(set.isEmpty)
        #expect(set.ranges.isEmpty)
        #expect(set.count == 0)
        #expect(!set.contains(0))
        #expect(set.contains(5..<5))
        #expect(set.gaps(in: 0..<10) == [0..<10])
        #expect(set.description == "[]")
    }

    @Test func adjacentRangesMergeIntoOne() {
        var set = RangeSet()
        set.insert(0..<10)
        set.insert(10..<20)
        #expect(set.ranges == [0..<20])
        #expect(set.count == 20)
    }

    @Test func adjacentRangeOnTheLeftMerges() {
        var set = RangeSet()
        set.insert(10..<20)
        set.insert(0..<10)
        #expect(set.ranges == [0..<20])
    }

    @Test func overlappingRangesMerge() {
        var set = RangeSet()
        set.insert(0..<10)
        set.insert(5..<15)
        #expect(set.ranges == [0..<15])
        set.insert(12..<30)
        #expect(set.ranges == [0..<30])
    }

    @Test func containedRangeChangesNothing() {
        var set = RangeSet()
        set.insert(0..<100)
        set.insert(10..<20)
        set.insert(0..<100)
        set.insert(99..<100)
        #expect(set.ranges == [0..<100])
    }

    @Test func containingRangeSwallowsSeveral() {
        var set = RangeSet()
        set.insert(10..<20)
        set.insert(30..<40)
        set.insert(50..<60)
        set.insert(5..<55)
        #expect(set.ranges == [5..<60])
    }

    @Test func rangeFillingAGapJoinsBothNeighbours() {
        var set = RangeSet()
        set.insert(0..<10)
        set.insert(20..<30)
        set.insert(10..<20)
        #expect(set.ranges == [0..<30])
    }

    @Test func outOfOrderInsertsStaySorted() {
        var set = RangeSet()
        set.insert(50..<60)
        set.insert(10..<20)
        set.insert(80..<90)
        set.insert(30..<40)
        #expect(set.ranges == [10..<20, 30..<40, 50..<60, 80..<90])
        #expect(set.count == 40)
        #expect(set.description == "[10..<20, 30..<40, 50..<60, 80..<90]")
    }

    @Test func rangesOneByteApartStaySeparate() {
        var set = RangeSet()
        set.insert(0..<10)
        set.insert(11..<20)
        #expect(set.ranges == [0..<10, 11..<20])
        #expect(set.gaps(in: 0..<20) == [10..<11])
    }

    @Test func emptyRangesAreIgnored() {
        var set = RangeSet()
        set.insert(5..<5)
        #expect(set.isEmpty)
        set.insert(0..<10)
        set.insert(20..<20)
        set.insert(10..<10)
        #expect(set.ranges == [0..<10])
    }

    @Test func initializerTakesUnionOfUnsortedInput() {
        let set = RangeSet([40..<50, 0..<10, 5..<12, 12..<12, 12..<20, 45..<60, 70..<71])
        #expect(set.ranges == [0..<20, 40..<60, 70..<71])
        #expect(set == RangeSet([0..<20, 40..<60, 70..<71]))
        #expect(set != RangeSet([0..<20, 40..<60]))
    }

    // MARK: - Remove

    @Test func removingTheMiddleSplitsARange() {
        var set = RangeSet([0..<100])
        set.remove(40..<60)
        #expect(set.ranges == [0..<40, 60..<100])
        #expect(set.count == 80)
    }

    @Test func removingAnEndTrimsARange() {
        var set = RangeSet([0..<100])
        set.remove(0..<10)
        #expect(set.ranges == [10..<100])
        set.remove(90..<200)
        #expect(set.ranges == [10..<90])
    }

    @Test func removingAcrossSeveralRangesKeepsTheOuterParts() {
        var set = RangeSet([0..<10, 20..<30, 40..<50, 60..<70])
        set.remove(5..<65)
        #expect(set.ranges == [0..<5, 65..<70])
    }

    @Test func removingExactlyCoveredRangesDropsThem() {
        var set = RangeSet([0..<10, 20..<30, 40..<50])
        set.remove(20..<30)
        #expect(set.ranges == [0..<10, 40..<50])
        set.remove(0..<50)
        #expect(set.isEmpty)
    }

    @Test func removingUncoveredBytesChangesNothing() {
        var set = RangeSet([10..<20, 30..<40])
        set.remove(20..<30)
        set.remove(0..<10)
        set.remove(40..<1000)
        set.remove(15..<15)
        #expect(set.ranges == [10..<20, 30..<40])
        var empty = RangeSet()
        empty.remove(0..<10)
        #expect(empty.isEmpty)
    }

    // MARK: - Queries

    @Test func containsOffsetChecksHalfOpenBounds() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(!set.contains(9))
        #expect(set.contains(10))
        #expect(set.contains(19))
        #expect(!set.contains(20))
        #expect(!set.contains(29))
        #expect(set.contains(30))
        #expect(!set.contains(40))
        #expect(!set.contains(-1))
    }

    @Test func containsRangeNeedsEveryByte() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(set.contains(10..<20))
        #expect(set.contains(12..<18))
        #expect(!set.contains(9..<12))
        #expect(!set.contains(15..<21))
        #expect(!set.contains(15..<35))
        #expect(!set.contains(20..<30))
        #expect(!set.contains(50..<60))
        #expect(set.contains(25..<25))
    }

    @Test func gapsListTheUncoveredParts() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(set.gaps(in: 0..<50) == [0..<10, 20..<30, 40..<50])
        #expect(set.gaps(in: 15..<35) == [20..<30])
        #expect(set.gaps(in: 10..<20) == [])
        #expect(set.gaps(in: 12..<12) == [])
        #expect(set.gaps(in: 20..<30) == [20..<30])
        #expect(set.gaps(in: 45..<50) == [45..<50])
    }

    @Test func firstGapIsTheEarliestUncoveredPart() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(set.firstGap(in: 0..<50) == 0..<10)
        #expect(set.firstGap(in: 10..<50) == 20..<30)
        #expect(set.firstGap(in: 15..<25) == 20..<25)
        #expect(set.firstGap(in: 32..<60) == 40..<60)
        #expect(set.firstGap(in: 10..<20) == nil)
        #expect(set.firstGap(in: 33..<36) == nil)
        #expect(set.firstGap(in: 5..<5) == nil)
        #expect(RangeSet().firstGap(in: 3..<7) == 3..<7)
    }

    @Test func coveredPrefixRunsToTheEndOfTheRange() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(set.coveredPrefix(from: 10) == 20)
        #expect(set.coveredPrefix(from: 15) == 20)
        #expect(set.coveredPrefix(from: 19) == 20)
        #expect(set.coveredPrefix(from: 20) == 20)
        #expect(set.coveredPrefix(from: 5) == 5)
        #expect(set.coveredPrefix(from: 35) == 40)
        #expect(set.coveredPrefix(from: 100) == 100)
    }

    @Test func intersectionClampsToTheQuery() {
        let set = RangeSet([10..<20, 30..<40])
        #expect(set.intersection(0..<50) == [10..<20, 30..<40])
        #expect(set.intersection(15..<35) == [15..<20, 30..<35])
        #expect(set.intersection(20..<30) == [])
        #expect(set.intersection(12..<13) == [12..<13])
        #expect(set.intersection(15..<15) == [])
    }

    // MARK: - Int64 extremes

    @Test func rangesEndingAtInt64MaxMerge() {
        var set = RangeSet()
        set.insert((Self.max - 10)..<Self.max)
        #expect(set.ranges == [(Self.max - 10)..<Self.max])
        #expect(set.count == 10)
        set.insert(0..<Self.max)
        #expect(set.ranges == [0..<Self.max])
        #expect(set.count == Self.max)
        #expect(set.contains(Self.max - 1))
        #expect(!set.contains(Self.max))
        #expect(set.contains(0..<Self.max))
        #expect(set.gaps(in: 0..<Self.max) == [])
        #expect(set.firstGap(in: 0..<Self.max) == nil)
        #expect(set.coveredPrefix(from: 123) == Self.max)
    }

    @Test func rangeAdjacentToOneEndingAtInt64MaxMerges() {
        var set = RangeSet([(Self.max - 10)..<Self.max])
        set.insert((Self.max - 20)..<(Self.max - 10))
        #expect(set.ranges == [(Self.max - 20)..<Self.max])
    }

    @Test func gapsNearInt64Max() {
        let set = RangeSet([0..<100, (Self.max - 10)..<Self.max])
        #expect(set.gaps(in: 50..<Self.max) == [100..<(Self.max - 10)])
        #expect(set.gaps(in: (Self.max - 20)..<Self.max) == [(Self.max - 20)..<(Self.max - 10)])
        #expect(set.gaps(in: (Self.max - 5)..<Self.max) == [])
        #expect(set.firstGap(in: (Self.max - 20)..<Self.max) == (Self.max - 20)..<(Self.max - 10))
        #expect(set.firstGap(in: (Self.max - 10)..<Self.max) == nil)
        #expect(set.coveredPrefix(from: Self.max - 5) == Self.max)
        #expect(set.coveredPrefix(from: Self.max) == Self.max)
        #expect(set.intersection((Self.max - 3)..<Self.max) == [(Self.max - 3)..<Self.max])
        #expect(set.count == 110)
    }

    @Test func removeNearInt64MaxSplits() {
        var set = RangeSet([0..<Self.max])
        set.remove((Self.max - 5)..<Self.max)
        #expect(set.ranges == [0..<(Self.max - 5)])
        set.remove(10..<20)
        #expect(set.ranges == [0..<10, 20..<(Self.max - 5)])
        #expect(set.count == Self.max - 15)
    }

    @Test func countSaturatesWhenARangeIsLongerThanInt64Max() {
        let set = RangeSet([Int64.min..<Self.max])
        #expect(set.count == Self.max)
        #expect(set.contains(Int64.min))
        #expect(set.contains(-1..<1))
    }

    @Test func countSaturatesWhenTheSumOverflows() {
        // Each range fits in Int64 on its own; together they do not.
        let set = RangeSet([Int64.min..<(-5), 0..<10])
        #expect(set.ranges.count == 2)
        #expect(set.count == Self.max)
    }

    @Test func countReachingExactlyInt64MaxIsNotSaturated() {
        let set = RangeSet([0..<10, 20..<Self.max])
        #expect(set.count == Self.max - 10)
    }

    // MARK: - Randomized model check

    @Test func agreesWithABoolArrayModel() {
        let size = 512
        var model = [Bool](repeating: false, count: size)
        var set = RangeSet()
        var random = SplitMix64(seed: 0x5eed_1234)

        for step in 0..<2000 {
            let lower = Int.random(in: 0...size, using: &random)
            // Mostly short ranges, sometimes empty or long ones.
            let maxLength = Int.random(in: 0..<10, using: &random) == 0 ? size : 40
            let upper = Swift.min(size, lower + Int.random(in: 0...maxLength, using: &random))
            let range = Int64(lower)..<Int64(upper)
            let inserting = Int.random(in: 0..<3, using: &random) != 0
            if inserting {
                set.insert(range)
            } else {
                set.remove(range)
            }
            for offset in lower..<upper {
                model[offset] = inserting
            }

            let expected = Self.ranges(of: model)
            #expect(set.ranges == expected, "step \(step): \(inserting ? "insert" : "remove") \(range)")
            #expect(Self.isCanonical(set.ranges), "step \(step): \(set)")
            #expect(set.count == Int64(model.filter { $0 }.count))

            // Queries over a random window, including ones past the model's end.
            let queryLower = Int.random(in: 0...size, using: &random)
            let queryUpper = Int.random(in: queryLower...(size + 8), using: &random)
            let query = Int64(queryLower)..<Int64(queryUpper)
            let covered = (queryLower..<queryUpper).allSatisfy { $0 < size && model[$0] }
            let expectedGaps = Self.gaps(of: model, in: query)
            #expect(set.contains(query) == covered, "step \(step): contains \(query)")
            #expect(set.gaps(in: query) == expectedGaps, "step \(step): gaps \(query)")
            #expect(set.firstGap(in: query) == expectedGaps.first, "step \(step): first gap \(query)")
            #expect(
                set.intersection(query) == Self.ranges(of: model).compactMap {
                    let clamped = $0.clamped(to: query)
                    return clamped.isEmpty ? nil : clamped
                })

            let offset = Int.random(in: 0..<(size + 4), using: &random)
            let isCovered = offset < size && model[offset]
            #expect(set.contains(Int64(offset)) == isCovered, "step \(step): contains \(offset)")
            var prefixEnd = offset
            while prefixEnd < size, model[prefixEnd] { prefixEnd += 1 }
            #expect(set.coveredPrefix(from: Int64(offset)) == Int64(prefixEnd))
        }
        // The run must have exercised both a populated and a fragmented set.
        #expect(!set.isEmpty)
    }

    // MARK: - Private methods

    /// The maximal runs of `true` in `model`.
    private static func ranges(of model: [Bool]) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var start: Int?
        for (offset, covered) in model.enumerated() {
            if covered, start == nil { start = offset }
            if !covered, let lower = start {
                result.append(Int64(lower)..<Int64(offset))
                start = nil
            }
        }
        if let lower = start { result.append(Int64(lower)..<Int64(model.count)) }
        return result
    }

    /// The maximal runs of uncovered bytes of `model` inside `query`; bytes
    /// past the model's end are uncovered.
    private static func gaps(of model: [Bool], in query: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var start: Int64?
        for offset in query {
            let covered = offset < Int64(model.count) && model[Int(offset)]
            if !covered, start == nil { start = offset }
            if covered, let lower = start {
                result.append(lower..<offset)
                start = nil
            }
        }
        if let lower = start { result.append(lower..<query.upperBound) }
        return result
    }

    /// Whether `ranges` are non-empty, sorted, disjoint and non-adjacent.
    private static func isCanonical(_ ranges: [Range<Int64>]) -> Bool {
        guard ranges.allSatisfy({ !$0.isEmpty }) else { return false }
        return zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }
    }
}
