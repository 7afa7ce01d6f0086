import Testing

@testable import PodFS
@testable import ReadRules

extension ReadBench {
    /// The origin shows, in this mount, that it stitches per request: a
    /// scan's fetch ahead of the first byte not cached (one byte, with
    /// `If-Range`) is answered with the whole body from byte 0 under the
    /// same validator (200), which marks the episode (`wholeBodyForRange`)
    /// and becomes its stream. The fetch is stopped before a byte of it
    /// arrives (the keeper gives way), and ends. What was cached stays, the
    /// files stay open, and nothing is on its way.
    mutating func stitched(by handle: UInt64 = 1) {
        guard let length = state.length, let first = state.present.gaps(in: 0..<length).first?.lowerBound,
            case .fetch(let id, _)? = state.fill(handle: handle, within: [first..<first + 1], tuning: tuning).first
        else {
            Issue.record("a scan fetches ahead in an episode with a gap: \(state)")
            return
        }
        let whole = FetchHead(
            status: 200, rangeFirst: nil, rangeLast: nil, total: nil, contentLength: length, etag: etag,
            lastModified: lastModified, effectiveURL: url)
        let context = Episode.State.HeadContext(
            now: now, feedLength: length, isBackground: false, holdingIndexLock: true)
        _ = state.head(id: id, whole, start: 0, last: nil, total: length, context: context)
        #expect(state.unstable == .wholeBodyForRange && state.streamID == id)
        #expect(state.stopFills([id]) == [id])
        end(id)
        #expect(state.fetches.isEmpty, "nothing on its way")
    }
}
