import Logging
public import RangeCache

extension EpisodeRules {
    /// The version of the origin's bytes the cache holds now: its
    /// generation, its length and validators as the origin told them, the
    /// bytes of it on disk, and what is known of it. Bytes are cached only
    /// once the length is known (a response's head tells it before its
    /// body): they live in the `told` phase, so a version with bytes and no
    /// length cannot be written. A transition that meets `untold` where
    /// bytes come stops a debug build, and is logged and ignored in a
    /// release one, as `Variant`'s transitions are.
    public struct Version: Equatable, Sendable {
        // MARK: - Nested types

        /// What is known of this generation's bytes.
        enum Phase: Equatable, Sendable {
            /// No response, and no index, told the length: nothing of it
            /// can be cached or agreed.
            case untold
            /// The length is known, and what is cached of it (`Told`).
            case told(Told)
        }

        /// A version whose length is known, and its bytes.
        struct Told: Equatable, Sendable {
            /// The origin's length.
            var length: Int64
            /// Bytes of this generation written to the scratch file.
            var present = RangeSet()
            /// Whether any byte of this generation was ever cached (on disk
            /// or in memory): if none was, no file can have read any of it
            /// (`EpisodeRules.State.dropVersion`).
            var hadBytes = false
            /// Two responses agreed on this version (the second one's head
            /// found the length and validators the first told, or the index
            /// kept): until then the origin may stitch per request, and the
            /// read-ahead sends no request before the last one's head came
            /// (`readAhead`), so a host that does costs one stray response,
            /// not two.
            var agreed = false
        }

        // MARK: - Properties

        /// Bumped when the origin's bytes changed (`replaced`): older
        /// handles read what they could read before, EIO for the rest.
        private(set) var generation: UInt64 = 0
        private(set) var etag: String?
        private(set) var lastModified: String?
        /// Its length and bytes, once a response or the index told the
        /// length.
        private(set) var phase = Phase.untold

        /// The origin's length, once a response or the index told it.
        var length: Int64? {
            if case .told(let told) = phase { return told.length }
            return nil
        }

        /// Bytes of this generation written to the scratch file.
        var present: RangeSet {
            if case .told(let told) = phase { return told.present }
            return RangeSet()
        }

        /// Whether any byte of this generation was ever cached.
        var hadBytes: Bool {
            if case .told(let told) = phase { return told.hadBytes }
            return false
        }

        /// Two responses agreed on this version (`Told.agreed`).
        var agreed: Bool {
            if case .told(let told) = phase { return told.agreed }
            return false
        }

        // MARK: - Lifecycle

        init() {}

        /// The version an earlier mount left in the index. Ranges with no
        /// length (an index no podfs writes: a length is saved with the
        /// first ranges) are not trusted, and the next commit forgets them.
        init(restoring record: EpisodeRecord) {
            (etag, lastModified) = (record.etag, record.lastModified)
            if let length = record.length {
                phase = .told(Told(length: length, present: RangeSet(record.ranges), hadBytes: !record.ranges.isEmpty))
            }
        }

        /// The length and validators as the origin told them.
        var told: OriginVersion {
            OriginVersion(length: length, etag: etag, lastModified: lastModified)
        }

        // MARK: - Transitions

        /// A response's head told the length and validators of this version.
        mutating func tell(length: Int64, etag: String?, lastModified: String?) {
            (self.etag, self.lastModified) = (etag, lastModified)
            guard case .told(var told) = phase else { return phase = .told(Told(length: length)) }
            told.length = length
            phase = .told(told)
        }

        /// Bytes of this version were cached, on disk or in memory.
        mutating func cached() {
            guard case .told(var told) = phase else { return impossible("bytes cached before a response told the length") }
            told.hadBytes = true
            phase = .told(told)
        }

        /// `range` was written to the scratch file; returns whether any of
        /// it is new (what the index must hear of).
        mutating func wrote(_ range: Range<Int64>) -> Bool {
            guard case .told(var told) = phase else {
                impossible("bytes \(range) written before a response told the length")
                return false
            }
            told.hadBytes = true
            defer { phase = .told(told) }
            guard !told.present.contains(range) else { return false }
            told.present.insert(range)
            return true
        }

        /// The scratch file is gone (evicted, deleted by hand): no byte of
        /// it is on disk.
        mutating func forgetBytes() {
            guard case .told(var told) = phase else { return }
            told.present = RangeSet()
            phase = .told(told)
        }

        /// A second response agreed on the length and validators.
        mutating func agree() {
            guard case .told(var told) = phase else { return impossible("agreed before a response told the length") }
            told.agreed = true
            phase = .told(told)
        }

        /// The origin replaced the bytes: a new generation, nothing of it
        /// cached or agreed yet. Its length and validators are told next.
        mutating func replaced() {
            generation &+= 1
            if case .told(let told) = phase { phase = .told(Told(length: told.length)) }
        }

        // MARK: - Private methods

        /// A transition met a version that cannot be: a bug in the read
        /// rules.
        private func impossible(_ what: String) {
            assertionFailure("EpisodeRules.Version: \(what): \(self)")
            Logger(label: "podfs").error(
                "a bug in the read rules: \(what); the episode's cached bytes are left as they were",
                metadata: ["version": "\(self)"])
        }
    }

    /// What the index has not heard of yet: saved by the next flush.
    public struct Unsaved: OptionSet, Sendable {
        public let rawValue: UInt8

        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        /// The version's `present` ranges changed.
        static let ranges = Unsaved(rawValue: 1)
        /// Its length, validators or link changed (saved with the next
        /// commit of ranges).
        static let validators = Unsaved(rawValue: 2)
    }
}

extension EpisodeRules.State {
    // MARK: - The version, read

    /// The origin's length, once a response or the index told it.
    public var length: Int64? { current.length }
    var etag: String? { current.etag }
    var lastModified: String? { current.lastModified }
    /// Bytes written to the scratch file for this generation.
    public var present: RangeSet { current.present }
    /// The current version's generation.
    public var generation: UInt64 { current.generation }
    /// The version cached now, as the origin told it.
    public var version: OriginVersion { current.told }
}
