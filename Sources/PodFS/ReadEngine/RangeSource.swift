public import ReadRules
/// Receives a streaming fetch; called on the network thread, in order.
public protocol FetchSink: AnyObject, Sendable {
    func receive(head: FetchHead) -> Bool
    /// The next bytes of the body, valid only during the call.
    func receive(body: UnsafeRawBufferPointer) -> Bool
    /// Every byte that arrived so far was passed to `receive(body:)`.
    func bodyBatchEnded()
    func complete(error: FetchError?)
}

/// Fetches byte ranges of episodes (the HTTP client implements it).
public protocol RangeSource: Sendable {
    /// Starts a GET of `range` with `If-Range: validator` when given.
    func fetch(url: String, range: Range<Int64>, validator: String?, sink: any FetchSink)
    /// Starts a GET as `fetch` does and returns how to stop it early (its
    /// sink then hears `complete` with an error), or `nil` when it cannot
    /// be stopped before its next bytes arrive.
    func start(url: String, range: Range<Int64>, validator: String?, sink: any FetchSink) -> FetchStopper?
}

/// Stops a transfer on its way (`RangeSource.start`).
public typealias FetchStopper = @Sendable () -> Void

extension RangeSource {
    public func start(url: String, range: Range<Int64>, validator: String?, sink: any FetchSink) -> FetchStopper? {
        fetch(url: url, range: range, validator: validator, sink: sink)
        return nil
    }
}
