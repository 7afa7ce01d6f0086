// libFuzzer target for RangeSet (scripts/fuzz rangeset). Compiled together with
// Sources/RangeCache/RangeSet.swift into one module. The input is a program:
// its first byte picks where on the Int64 line the set lives (from 0, ending
// at Int64.max, starting at Int64.min) and how far apart neighbouring points
// are; each following 3 bytes are one operation (insert, remove, contains,
// intersection, gaps, firstGap, coveredPrefix, init from a list) on points
// 0...256 of that line. Every result and the set's invariants are checked
// against a model: one Bool per point.

#if canImport(RangeCache)
import RangeCache
#endif

/// The points the model knows, mapped onto the Int64 line.
private struct Line {
    static let points = 256
    let base: Int64
    let scale: Int64

    init(_ selector: UInt8) {
        let scales: [Int64] = [1, 3, 4096, 1 << 40]
        scale = scales[Int(selector & 3)]
        switch (selector >> 2) % 3 {
        case 0: base = 0
        case 1: base = Int64.max - Int64(Line.points) * scale  // the last point is Int64.max
        default: base = Int64.min
        }
    }

    func value(_ point: Int) -> Int64 { base + Int64(point) * scale }
    func range(_ a: Int, _ b: Int) -> Range<Int64> { value(min(a, b))..<value(max(a, b)) }
}

/// A disagreement between RangeSet and the model.
struct RangeSetFuzzFinding: Error, CustomStringConvertible {
    var description: String
}

private func check(_ condition: Bool, _ message: @autoclosure () -> String) throws(RangeSetFuzzFinding) {
    if !condition { throw RangeSetFuzzFinding(description: "RangeSet disagrees with the model: \(message())") }
}

/// The model's covered runs inside points a..<b, as ranges on the line.
private func runs(_ model: [Bool], _ a: Int, _ b: Int, covered: Bool, _ line: Line) -> [Range<Int64>] {
    var result: [Range<Int64>] = []
    var start: Int?
    for point in a..<b {
        if model[point] == covered {
            if start == nil { start = point }
        } else if let s = start {
            result.append(line.range(s, point))
            start = nil
        }
    }
    if let s = start { result.append(line.range(s, b)) }
    return result
}

/// Runs one input; throws the first finding. The target's entry file
/// crashes on it (for libFuzzer); the unit tests that replay the corpus
/// fail the test that names the input instead.
func rangeSetFuzzCheck(_ data: UnsafePointer<UInt8>?, _ size: Int) throws(RangeSetFuzzFinding) {
    guard let data, size >= 1 else { return }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let line = Line(bytes[0])
    var set = RangeSet()
    var model = [Bool](repeating: false, count: Line.points)
    var pending: [Range<Int64>] = []
    var index = 1
    while index + 3 <= size {
        let op = bytes[index] % 8
        let a = Int(bytes[index + 1])
        let b = Int(bytes[index + 2])
        index += 3
        let lo = min(a, b), hi = max(a, b)
        switch op {
        case 0:
            set.insert(line.range(a, b))
            for p in lo..<hi { model[p] = true }
        case 1:
            set.remove(line.range(a, b))
            for p in lo..<hi { model[p] = false }
        case 2:
            try check(set.contains(line.range(a, b)) == model[lo..<hi].allSatisfy { $0 }, "contains(\(lo)..<\(hi))")
            try check(set.contains(line.value(a)) == model[a], "contains(\(a))")
        case 3:
            try check(set.intersection(line.range(a, b)) == runs(model, lo, hi, covered: true, line), "intersection")
        case 4:
            try check(set.gaps(in: line.range(a, b)) == runs(model, lo, hi, covered: false, line), "gaps")
        case 5:
            try check(set.firstGap(in: line.range(a, b)) == runs(model, lo, hi, covered: false, line).first, "firstGap")
        case 6:
            var end = a
            while end < Line.points, model[end] { end += 1 }
            try check(set.coveredPrefix(from: line.value(a)) == line.value(end), "coveredPrefix(\(a))")
        default:
            // Collect ranges; every fourth one rebuilds a set from the list
            // (any order, overlapping, empty) and compares it with inserts.
            pending.append(line.range(b, a))
            if pending.count % 4 == 0 {
                var inserted = RangeSet()
                for range in pending { inserted.insert(range) }
                try check(RangeSet(pending.reversed()) == inserted, "init(\(pending))")
            }
        }
        // Invariants after every operation: sorted, non-empty, disjoint, not
        // touching, and exactly the model's runs.
        for (i, range) in set.ranges.enumerated() {
            try check(!range.isEmpty, "an empty range in \(set)")
            if i > 0 { try check(set.ranges[i - 1].upperBound < range.lowerBound, "unsorted or touching: \(set)") }
        }
        try check(set.ranges == runs(model, 0, Line.points, covered: true, line), "ranges \(set)")
        try check(set.count == Int64(model.filter { $0 }.count) * line.scale, "count of \(set)")
        try check(set.isEmpty == !model.contains(true), "isEmpty")
    }
}
