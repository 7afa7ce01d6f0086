import Foundation
import Locking

/// A whole response body, for feeds and small documents.
public struct HTTPResponse: Sendable {
    public var head: HTTPResponseHead
    public var body: [UInt8]
}

extension HTTPClient {
    /// Fetches a whole resource and waits for it; refuses bodies larger than
    /// `limit` bytes (decoded), stopping the transfer as soon as the
    /// `Content-Length` or the bytes received pass it, so no more than
    /// `limit` bytes are ever held. Call from any thread except the network
    /// thread.
    public func fetchAll(_ request: HTTPRequest, limit: Int) throws(HTTPError) -> HTTPResponse {
        let collector = Collector(limit: limit, url: request.url)
        start(request, delegate: collector)
        collector.done.wait()
        return try collector.result.withLock { $0 }!.get()
    }
}

/// Gathers a body in memory and signals when the transfer ends.
private final class Collector: HTTPTransferDelegate {
    let done = DispatchSemaphore(value: 0)
    let result = Locked<Result<HTTPResponse, HTTPError>?>(nil)
    private let limit: Int
    private let url: String
    /// Guarded by being touched on the network thread only.
    private let partial = Locked<(head: HTTPResponseHead?, body: [UInt8], overLimit: Bool)>((nil, [], false))

    init(limit: Int, url: String) {
        self.limit = limit
        self.url = url
    }

    func receive(head: HTTPResponseHead) -> Bool {
        partial.withLock { state in
            state.head = head
            // A declared length over the limit stops before any body byte
            // (for a compressed body this is the compressed size, which a
            // real feed does not exceed when the decoded one fits).
            if let declared = head.contentLength, declared > Int64(limit) {
                state.overLimit = true
                return false
            }
            if let declared = head.contentLength, declared > 0, head.header("content-encoding") == nil {
                state.body.reserveCapacity(Int(declared))
            }
            return true
        }
    }

    func receive(body: UnsafeRawBufferPointer) -> Bool {
        partial.withLock { state in
            if state.body.count + body.count > limit {
                state.overLimit = true
                state.body = []
                return false
            }
            state.body.append(contentsOf: body)
            return true
        }
    }

    func complete(error: HTTPError?) {
        let outcome: Result<HTTPResponse, HTTPError> = partial.withLock { state in
            if state.overLimit {
                return .failure(HTTPError(
                    kind: .tooLarge,
                    message: "the response is larger than the limit of \(limit) bytes; the download was stopped there",
                    url: url))
            }
            if let error { return .failure(error) }
            guard let head = state.head else {
                return .failure(HTTPError(kind: .other, message: "no response", url: url))
            }
            return .success(HTTPResponse(head: head, body: state.body))
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
}
