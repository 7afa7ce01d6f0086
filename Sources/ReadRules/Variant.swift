import Logging
import RangeCache

extension EpisodeRules {
    /// Which of the origin's variants an episode's cached bytes are, and
    /// where the next request for it goes (docs/DESIGN.md, "Episodes and
    /// their variants"). Its parts are enums and optionals where flags
    /// stood, so a combination that cannot happen cannot be written: a
    /// stream without a stitching origin, a final link without a final
    /// episode, a link both pinned and gone. It changes only through the
    /// transitions below; one that meets what cannot happen stops a debug
    /// build, and is logged and changes nothing in a release one
    /// (`impossible`).
    public struct Variant: Equatable, Sendable {
        // MARK: - Nested types

        /// Where requests go (its *route*; the network between podfs and
        /// the origin is the *link*, `LinkEstimate`).
        public enum Route: Equatable, Sendable {
            /// The enclosure URL, through its redirects.
            case enclosure
            /// The end of the redirect chain the cached variant came from,
            /// asked directly with `If-Range`, across mounts.
            case pinned(Link)
            /// The pinned link of a partly cached variant stopped working
            /// (403, 404, 410): requests follow the enclosure again, and if
            /// it leads to another variant, the cached bytes go and the log
            /// says why (`EpisodeRules.State.forgetRedirect`).
            case gone
        }

        /// How the origin serves the episode.
        public enum Serving: Equatable, Sendable {
            /// The same bytes to every request, as far as anything shows.
            case stable
            /// Different bytes per request, found for `reason` and kept in
            /// the index: the episode is streamed whole, `stream` being the
            /// last such fetch started (`EpisodeRules.State.streamingWhole`).
            /// `unproven`: the cached bytes were restored from an index an
            /// earlier podfs wrote from responses without a validator,
            /// which nothing shows to be one variant; the next stream from
            /// byte 0 replaces them (`restartsStream`).
            case stitched(StitchReason, stream: UInt64?, unproven: Bool)
        }

        /// A link at the end of a redirect chain, and who sent podfs there
        /// (`FetchHead.issuer`; `nil`: nobody, the enclosure URL was it).
        /// The two go together: a link forgotten forgets its issuer.
        public struct Link: Equatable, Sendable {
            let url: String
            let issuer: String?
            /// `url`'s host, whose estimate sizes the episode's reads
            /// (`LinkEstimates.estimate(feed:pinned:)`): made once, not at
            /// every read.
            let host: LinkEstimates.Host

            init(url: String, issuer: String?) {
                self.url = url
                self.issuer = issuer
                host = LinkEstimates.Host(url: url)
            }
        }

        /// Every byte of one variant is cached: kept as it is, whatever the
        /// origin serves now (`EpisodeRules.State.noteIfFinal`), with where
        /// it came from (`keepsFinal`).
        public enum Final: Equatable, Sendable {
            /// Through the enclosure URL, unpinned.
            case throughEnclosure
            /// From a pinned link, which a final episode keeps when it is
            /// forgotten (`forgetRoute`).
            case from(Link)

            var link: Link? {
                if case .from(let link) = self { return link }
                return nil
            }
        }

        // MARK: - Properties

        private(set) var route = Route.enclosure
        private(set) var serving = Serving.stable
        private(set) var final: Final?

        /// The pinned link, if requests go to one.
        var pinned: Link? {
            if case .pinned(let link) = route { return link }
            return nil
        }

        /// The link the index keeps: the pinned one, or the one a final
        /// episode came from once its link is forgotten.
        var kept: Link? { pinned ?? final?.link }

        /// Why the origin serves different bytes per request; `nil` while it
        /// looks stable.
        var stitched: StitchReason? {
            if case .stitched(let reason, _, _) = serving { return reason }
            return nil
        }

        /// The last fetch started to stream a stitching origin's episode whole.
        var stream: UInt64? {
            if case .stitched(_, let stream, _) = serving { return stream }
            return nil
        }

        /// Whether the cached bytes are unproven (`Serving.stitched`).
        var unproven: Bool {
            if case .stitched(_, _, let unproven) = serving { return unproven }
            return false
        }

        // MARK: - Init

        init() {}

        /// What an earlier mount left in the index. `unprovenBytes`: its
        /// cached bytes came from responses nothing shows to be one
        /// version, so the episode is taken for a stitching one without a
        /// validator and is not final.
        init(restoring record: EpisodeVariant, unprovenBytes: Bool) {
            let link = record.pinnedURL.map { Link(url: $0, issuer: record.pinnedIssuer) }
            route = link.map(Route.pinned) ?? .enclosure
            if unprovenBytes {
                serving = .stitched(.noValidator, stream: nil, unproven: true)
            } else {
                serving = record.unstable.map { .stitched(StitchReason(code: $0), stream: nil, unproven: false) } ?? .stable
                final = record.isFinal ? link.map(Final.from) ?? .throughEnclosure : nil
            }
        }

        // MARK: - Transitions

        /// A response came from `url`, sent there by `issuer`: requests go
        /// there from now on.
        mutating func pin(_ url: String, issuer: String?) {
            route = .pinned(Link(url: url, issuer: issuer))
        }

        /// The pinned link stopped answering with the variant: requests
        /// follow the enclosure again. A final episode keeps the link it
        /// came from, with who sent podfs there (the index keeps both,
        /// `takeCommitSnapshot`); another with bytes cached marks the link
        /// gone.
        mutating func forgetRoute(final complete: Bool, cached: Bool) {
            route = complete || !cached ? .enclosure : .gone
        }

        /// A link answered again after one was gone: said once, if at all.
        mutating func routeAnswered() {
            if route == .gone { route = .enclosure }
        }

        /// The origin was found to serve different bytes per request, for
        /// `reason`. Returns whether that is news (the first reason stays).
        @discardableResult
        mutating func markStitched(_ reason: StitchReason) -> Bool {
            guard case .stable = serving else { return false }
            serving = .stitched(reason, stream: nil, unproven: false)
            return true
        }

        /// Fetch `id` streams the stitching origin's episode whole.
        mutating func streamStarted(_ id: UInt64) {
            guard case .stitched(let reason, _, let unproven) = serving else {
                return impossible("a stream started for an episode whose origin looks stable")
            }
            serving = .stitched(reason, stream: id, unproven: unproven)
        }

        /// Every byte is cached: the episode is final, kept with the link
        /// it came from.
        mutating func becameFinal() {
            guard !unproven else { return impossible("unproven bytes made final") }
            final = pinned.map(Final.from) ?? .throughEnclosure
        }

        /// The cached bytes went (a new version, an eviction): nothing is
        /// final, nothing is unproven.
        mutating func bytesDropped() {
            final = nil
            if case .stitched(let reason, let stream, true) = serving {
                serving = .stitched(reason, stream: stream, unproven: false)
            }
        }

        // MARK: - Private methods

        /// A transition met a variant that cannot be: a bug in the read
        /// rules. A debug build stops; a release one says so in the log and
        /// leaves the variant as it was.
        private func impossible(_ what: String) {
            assertionFailure("EpisodeRules.Variant: \(what): \(self)")
            Logger(label: "podfs").error(
                "a bug in the read rules: \(what); the episode's variant is left as it was",
                metadata: ["variant": "\(self)"])
        }
    }
}

extension EpisodeRules.State {
    // MARK: - The variant, read

    /// The pinned link requests go to; `nil`: the enclosure URL.
    public var effectiveURL: String? { variant.pinned?.url }
    /// The pinned link's host, whose own estimate sizes reads once it has
    /// a round trip (`LinkEstimates.estimate(feed:pinned:)`).
    public var pinnedHost: LinkEstimates.Host? { variant.pinned?.host }
    /// Who sent podfs to the link the index keeps (`Variant.kept`).
    var pinnedIssuer: String? { variant.kept?.issuer }
    /// The pinned link of a partly cached variant stopped working.
    var pinnedRouteGone: Bool { variant.route == .gone }
    /// Why the origin serves different bytes per request; `nil` while it
    /// looks stable.
    public var unstable: StitchReason? { variant.stitched }
    /// The last fetch started to stream the episode whole.
    var streamID: UInt64? { variant.stream }
    /// Every byte of one variant is cached, and kept.
    var isFinal: Bool { variant.final != nil }
    /// The link the final variant came from.
    var finalURL: String? { variant.final?.link?.url }
    /// The cached bytes were restored unproven (`Variant.Serving`).
    var unprovenBytes: Bool { variant.unproven }
}
