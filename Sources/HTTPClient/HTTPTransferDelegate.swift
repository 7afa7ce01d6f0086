/// Receives one transfer's response as it streams in.
///
/// All methods are called on the client's network thread, in order:
/// `receive(head:)` once, `receive(body:)` for each chunk (libcurl hands
/// them over in pieces of at most 16 KiB), `bodyBatchEnded()` whenever the
/// bytes that were waiting in the socket have all been handed over, then
/// `complete` exactly once (also after an abort or a failure before any
/// byte). Implementations must not block for long: they stall every
/// transfer.
public protocol HTTPTransferDelegate: AnyObject, Sendable {
    /// The final response's head; return `false` to abort the transfer.
    func receive(head: HTTPResponseHead) -> Bool
    /// The next chunk of the body; return `false` to abort the transfer.
    func receive(body: UnsafeRawBufferPointer) -> Bool
    /// Every byte that has arrived so far was handed to `receive(body:)`;
    /// a delegate that gathers small chunks into bigger writes passes on
    /// what it holds now, so nobody waits for bytes that are already here.
    func bodyBatchEnded()
    /// The transfer ended: `nil` when the whole body arrived.
    func complete(error: HTTPError?)
}

extension HTTPTransferDelegate {
    /// Delegates that use each chunk as it comes need no batch boundaries.
    public func bodyBatchEnded() {}
}
