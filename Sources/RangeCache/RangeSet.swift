/// A set of byte offsets stored as sorted, disjoint, non-adjacent half-open
/// ranges.
///
/// `RangeSet` guarantees that `ranges` is always sorted by lower bound, that
/// no range is empty, and that no two ranges overlap or touch: inserting
/// `0..<10` and then `10..<20` leaves the single range `0..<20`. Lookups use
/// binary search and take O(log n) in the number of ranges. Every bound of
/// `Int64`, including `Int64.max` as an upper bound, works without overflow;
/// only `count` does arithmetic, and it saturates at `Int64.max`.
public struct RangeSet: Sendable, Equatable {
    // MARK: - Public properties

    /// The covered ranges, sorted, disjoint and non-adjacent.
    public private(set) var ranges: [Range<Int64>]

    /// Whether no byte is covered.
    public var isEmpty: Bool { ranges.isEmpty }

    /// The number of bytes covered, saturating at `Int64.max`.
    public var count: Int64 {
        var total: Int64 = 0
        for range in ranges {
            let (length, lengthOverflow) = range.upperBound.subtractingReportingOverflow(
                range.lowerBound)
            if lengthOverflow { return .max }
            let (sum, sumOverflow) = total.addingReportingOverflow(length)
            if sumOverflow { return .max }
            total = sum
        }
        return total
    }

    // MARK: - Init

    /// Creates an empty set.
    public init() {
        ranges = []
    }

    /// Creates a set covering the union of `ranges`, which may overlap, touch,
    /// be empty or come in any order.
    public init(_ ranges: [Range<Int64>]) {
        self.ranges = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            insert(range)
        }
    }

    // MARK: - Mutation

    /// Adds every byte of `range`, merging it with the ranges it overlaps or
    /// touches on either side.
    public mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        // The first range that ends at or after our start overlaps or touches
        // us on the left; the first that starts after our end is clear of us.
        let first = index(where: { $0.upperBound >= range.lowerBound })
        let end = index(from: first, where: { $0.lowerBound > range.upperBound })
        guard first < end else {
            ranges.insert(range, at: first)
            return
        }
        let merged =
            min(range.lowerBound, ranges[first].lowerBound)..<max(
                range.upperBound, ranges[end - 1].upperBound)
        ranges.replaceSubrange(first..<end, with: CollectionOfOne(merged))
    }

    /// Removes every byte of `range`, splitting a range that straddles it.
    public mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        let first = index(where: { $0.upperBound > range.lowerBound })
        let end = index(from: first, where: { $0.lowerBound >= range.upperBound })
        guard first < end else { return }
        var remainder: [Range<Int64>] = []
        if ranges[first].lowerBound < range.lowerBound {
            remainder.append(ranges[first].lowerBound..<range.lowerBound)
        }
        if ranges[end - 1].upperBound > range.upperBound {
            remainder.append(range.upperBound..<ranges[end - 1].upperBound)
        }
        ranges.replaceSubrange(first..<end, with: remainder)
    }

    // MARK: - Queries

    /// Whether every byte of `range` is covered; an empty range always is.
    public func contains(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return true }
        let candidate = index(where: { $0.upperBound > range.lowerBound })
        guard candidate < ranges.endIndex else { return false }
        return ranges[candidate].lowerBound <= range.lowerBound
            && ranges[candidate].upperBound >= range.upperBound
    }

    /// Whether the byte at `offset` is covered.
    public func contains(_ offset: Int64) -> Bool {
        let candidate = index(where: { $0.upperBound > offset })
        return candidate < ranges.endIndex && ranges[candidate].lowerBound <= offset
    }

    /// The covered parts of `range`, sorted.
    public func intersection(_ range: Range<Int64>) -> [Range<Int64>] {
        guard !range.isEmpty else { return [] }
        var result: [Range<Int64>] = []
        var position = index(where: { $0.upperBound > range.lowerBound })
        while position < ranges.endIndex, ranges[position].lowerBound < range.upperBound {
            result.append(ranges[position].clamped(to: range))
            position += 1
        }
        return result
    }

    /// The parts of `range` that are not covered, sorted.
    public func gaps(in range: Range<Int64>) -> [Range<Int64>] {
        guard !range.isEmpty else { return [] }
        var result: [Range<Int64>] = []
        var cursor = range.lowerBound
        for covered in intersection(range) {
            if covered.lowerBound > cursor {
                result.append(cursor..<covered.lowerBound)
            }
            cursor = covered.upperBound
        }
        if cursor < range.upperBound {
            result.append(cursor..<range.upperBound)
        }
        return result
    }

    /// The first part of `range` that is not covered, or `nil` when all of it
    /// is.
    public func firstGap(in range: Range<Int64>) -> Range<Int64>? {
        guard !range.isEmpty else { return nil }
        var cursor = range.lowerBound
        var position = index(where: { $0.upperBound > cursor })
        if position < ranges.endIndex, ranges[position].lowerBound <= cursor {
            cursor = ranges[position].upperBound
            position += 1
        }
        guard cursor < range.upperBound else { return nil }
        let end =
            position < ranges.endIndex
            ? min(ranges[position].lowerBound, range.upperBound) : range.upperBound
        return cursor..<end
    }

    /// The end of the covered run that starts at `offset`: every byte of
    /// `offset..<coveredPrefix(from: offset)` is covered. Returns `offset`
    /// itself when the byte at `offset` is not covered.
    public func coveredPrefix(from offset: Int64) -> Int64 {
        let candidate = index(where: { $0.upperBound > offset })
        guard candidate < ranges.endIndex, ranges[candidate].lowerBound <= offset else {
            return offset
        }
        // Ranges never touch, so the run ends where this range ends.
        return ranges[candidate].upperBound
    }

    // MARK: - Private methods

    /// The first index whose range satisfies `predicate`, which must be false
    /// for a prefix of `ranges` and true for the rest; `endIndex` if none.
    private func index(
        from start: Int = 0, where predicate: (Range<Int64>) -> Bool
    ) -> Int {
        var low = start
        var high = ranges.endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if predicate(ranges[middle]) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}

// MARK: - CustomStringConvertible

extension RangeSet: CustomStringConvertible {
    /// The ranges in order, for logs: `[0..<10, 20..<30]`.
    public var description: String {
        "[" + ranges.map { "\($0.lowerBound)..<\($0.upperBound)" }.joined(separator: ", ") + "]"
    }
}
