extension Int64 {
    /// `self + other`, held at `Int64.max` or `Int64.min` instead of
    /// trapping: for totals over values that came from outside.
    public func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
