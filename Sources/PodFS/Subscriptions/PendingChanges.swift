/// The local changes of the subscription list that the sync server has not
/// yet acknowledged: for each URL, the latest intent only.
///
/// A URL added and then removed before a push is one pending removal, never
/// both, so what is pushed is always what the listener last asked for.
public struct PendingChanges: Sendable, Equatable {
    // MARK: - Nested types

    /// What the listener last asked for one URL.
    public enum Intent: Sendable, Equatable {
        case add
        case remove
    }

    // MARK: - Properties

    /// URLs in the order their latest change was made.
    public private(set) var urls: [String] = []
    /// The latest intent of each URL in `urls`.
    private var intents: [String: Intent] = [:]

    // MARK: - Init

    /// Pending changes restored from storage; a URL in both lists is taken
    /// as removed (the later list).
    public init(adds: [String] = [], removes: [String] = []) {
        for url in adds { record(.add, url) }
        for url in removes { record(.remove, url) }
    }

    // MARK: - Methods

    /// The URLs to add on the server, in order.
    public var adds: [String] { urls.filter { intents[$0] == .add } }

    /// The URLs to remove on the server, in order.
    public var removes: [String] { urls.filter { intents[$0] == .remove } }

    public var isEmpty: Bool { urls.isEmpty }

    public var count: Int { urls.count }

    /// The latest intent for `url`, if it has one not yet acknowledged.
    public func intent(for url: String) -> Intent? { intents[url] }

    /// Records the listener's latest intent for `url`, replacing any earlier
    /// one.
    public mutating func record(_ intent: Intent, _ url: String) {
        if intents.updateValue(intent, forKey: url) != nil {
            urls.removeAll { $0 == url }
        }
        urls.append(url)
    }

    /// Forgets the changes the server acknowledged: each URL whose intent is
    /// still the one that was pushed. A URL changed again while the push was
    /// in flight keeps its newer intent.
    mutating func acknowledge(adds: [String], removes: [String]) {
        var done = Set<String>()
        for url in adds where intents[url] == .add { done.insert(url) }
        for url in removes where intents[url] == .remove { done.insert(url) }
        guard !done.isEmpty else { return }
        for url in done { intents[url] = nil }
        urls.removeAll { done.contains($0) }
    }
}
