/// Origins that serve different bytes per request (docs/DESIGN.md,
/// "Episodes and their variants"): hosts that stitch ads into each
/// response. Continuity is checked, not assumed: a response that shows the
/// origin is such a host marks the episode unstable, and the mark is kept
/// in the index.
extension Episode.State {
    // MARK: - Static methods

    /// Why a response head shows an origin that serves different bytes per
    /// request, or `nil`:
    /// - the length or the validator changed from the one a response in
    ///   this mount already confirmed (a change between mounts is a
    ///   publisher's new version, not a sign of stitching);
    /// - a range was asked and the whole body came (200) with the same
    ///   validator: an `If-Range` the origin does not honour, or no ranges.
    static func unstableReason(
        was old: OriginVersion, now new: OriginVersion, confirmedInThisMount: Bool, status: Int, askedRange: Bool
    ) -> String? {
        if confirmedInThisMount, let before = old.length, let after = new.length, before != after {
            return "the length changed between requests (\(before) then \(after) bytes)"
        }
        if confirmedInThisMount, old.isReplaced(by: new) {
            return "the validator changed between requests"
        }
        if status == 200, askedRange, !old.isReplaced(by: new) {
            return "a range was asked and the whole body came (HTTP 200)"
        }
        return nil
    }
}
