/// Why an episode's origin is taken to serve different bytes per request
/// (docs/DESIGN.md, "Episodes and their variants"): the episode's mark
/// (`EpisodeRules.State.unstable`). The index keeps `code`, which never changes
/// with the wording; `description` is what logs and `user.podfs.variant`
/// say.
public enum StitchReason: Equatable, Sendable, CustomStringConvertible {
    /// The length changed from the one a response in this mount confirmed.
    case lengthChanged(before: Int64?, after: Int64?)
    /// The validator changed from the one a response in this mount confirmed.
    case validatorChanged
    /// An ETag a response of this mount confirmed is missing from the next.
    case etagVanished
    /// A range was asked and the whole body came (200) with the same
    /// validator: an `If-Range` the origin does not honour, or no ranges.
    case wholeBodyForRange
    /// Bytes fetched again did not match the cached ones.
    case overlapMismatch
    /// The origin sends no validator that proves a version (no strong
    /// ETag, no strong Last-Modified): nothing proves two of its responses
    /// are one version.
    case noValidator
    /// Another episode of its show is marked (no evidence of its own).
    case showStitches
    /// A code this podfs does not know (a newer one wrote it): evidence of
    /// its own, as any mark but `showStitches`.
    case other(String)

    // MARK: - Init

    /// The reason kept in the index as `code`.
    init(code: String) {
        switch code {
        case "length-changed": self = .lengthChanged(before: nil, after: nil)
        case "validator-changed": self = .validatorChanged
        case "etag-vanished": self = .etagVanished
        case "whole-body-for-range": self = .wholeBodyForRange
        case "overlap-mismatch": self = .overlapMismatch
        case "no-validator": self = .noValidator
        case "show-stitches": self = .showStitches
        default: self = .other(code)
        }
    }

    // MARK: - Properties

    /// The index's code: stable across versions (schema 4 moved the
    /// sentences earlier versions kept to these, `IndexSchema.steps`).
    public var code: String {
        switch self {
        case .lengthChanged: "length-changed"
        case .validatorChanged: "validator-changed"
        case .etagVanished: "etag-vanished"
        case .wholeBodyForRange: "whole-body-for-range"
        case .overlapMismatch: "overlap-mismatch"
        case .noValidator: "no-validator"
        case .showStitches: "show-stitches"
        case .other(let code): code
        }
    }

    public var description: String {
        switch self {
        case .lengthChanged(let before?, let after?):
            "the length changed between requests (\(before) then \(after) bytes)"
        case .lengthChanged: "the length changed between requests"
        case .validatorChanged: "the validator changed between requests"
        case .etagVanished: "the ETag vanished between requests"
        case .wholeBodyForRange: "a range was asked and the whole body came (HTTP 200)"
        case .overlapMismatch: "bytes fetched again did not match the cached ones"
        case .noValidator: "the origin sends no validator that proves a version (no strong ETag or Last-Modified)"
        case .showStitches: "as another episode of its show"
        case .other(let code): "marked by another podfs (\(code))"
        }
    }

    /// Equal by kind: the lengths of `lengthChanged` are for the log.
    public static func == (lhs: StitchReason, rhs: StitchReason) -> Bool {
        lhs.code == rhs.code
    }
}
