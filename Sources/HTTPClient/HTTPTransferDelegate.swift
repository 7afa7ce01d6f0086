/// Receives one transfer's response as it streams in.
///
/// All three methods are called on the client's network thread, in order:
/// `receive(head:)` once, `receive(body:)` for each chunk, then `complete`
/// exactly once (also after an abort or a failure before any byte).
/// Implementations must not block for long: they stall every transfer.
public protocol HTTPTransferDelegate: AnyObject, Sendable {
    /// The final response's head; return `false` to abort the transfer.
    func receive(head: HTTPResponseHead) -> Bool
    /// The next chunk of the body; return `false` to abort the transfer.
    func receive(body: UnsafeRawBufferPointer) -> Bool
    /// The transfer ended: `nil` when the whole body arrived.
    func complete(error: HTTPError?)
}
