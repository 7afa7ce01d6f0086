extension EpisodeRules {
    /// A request the driver answers once the rules say how: a read, an
    /// open, a `stat` waiting for the origin's size; or a scratch file
    /// the driver opened, which only it reads, writes and syncs. The state keeps it
    /// and names it in its effects, but cannot answer it: what it holds is
    /// opaque, and only the driver resolves it (`ReadEngine/Requests.swift`).
    /// Two tokens are equal when they name the same request, so tests
    /// assert which request an effect answers.
    ///
    /// It holds the request itself, not a number the driver looks up: a
    /// request the rules drop without an answer is failed with EIO when
    /// its last token goes (the reply's `deinit`), instead of waiting in a
    /// table until the unmount.
    public struct Token<Kind>: Hashable, Sendable {
        /// The request: a reply object, or a box around an answer.
        public let request: any AnyObject & Sendable

        public init(wrapping request: any AnyObject & Sendable) {
            self.request = request
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.request === rhs.request
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(ObjectIdentifier(request))
        }
    }

    public enum ReadRequest {}
    public enum OpenRequest {}
    public enum SizeRequest {}
    public enum ScratchRequest {}

    /// A read's reply.
    public typealias ReadToken = Token<ReadRequest>
    /// An open's reply.
    public typealias OpenToken = Token<OpenRequest>
    /// An attribute request waiting for the first response's size.
    public typealias SizeToken = Token<SizeRequest>
    /// A version's scratch file, open: the rules say which file a read is
    /// served from, written to, synced or reshaped; the driver does it.
    public typealias FileToken = Token<ScratchRequest>

    /// The current version's scratch file, as the state knows it.
    public enum Scratch: Equatable, Sendable {
        /// None open: the driver opens (or creates) it at the episode's
        /// path when a byte is to be written or read (`scratchFile(of:)`),
        /// and tells `scratchOpened`.
        case notOpen
        /// Open.
        case open(FileToken)
        /// Being replaced (`Effect.replace`): the path still names the
        /// replaced version's file until the driver made the new one
        /// (`replaced(with:)`), so no file is opened at it.
        case replacing
    }

    /// How an open is answered: the file handle, whether the kernel keeps
    /// its page cache from earlier opens (the bytes did not change) and
    /// whether it drops the attributes it holds first (a size it was told
    /// before the true one was known).
    public struct OpenAnswer: Equatable, Sendable {
        public internal(set) var handle: UInt64
        public internal(set) var keepCache: Bool
        public internal(set) var dropAttributes: Bool
    }
}

extension EpisodeRules.State {
    /// The current version's open scratch file, if one is.
    public var scratch: EpisodeRules.FileToken? {
        if case .open(let file) = storage { return file }
        return nil
    }

    /// The scratch file is being replaced (`EpisodeRules.Scratch.replacing`).
    public var replacingScratch: Bool { storage == .replacing }
}
