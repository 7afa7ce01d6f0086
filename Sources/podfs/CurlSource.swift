import HTTPClient
import PodFS

/// Wires the HTTP client into the reader's and the catalogue's small
/// network protocols.
struct CurlSource: RangeSource, FeedSource {
    let client: HTTPClient
    /// The largest feed body accepted, in bytes.
    let feedLimit: Int

    func fetch(url: String, range: Range<Int64>, validator: String?, sink: any FetchSink) {
        client.start(HTTPRequest(url: url, range: range, ifRange: validator), delegate: SinkAdapter(sink: sink))
    }

    func fetchFeed(url: String) throws(FetchError) -> [UInt8] {
        let response: HTTPResponse
        do {
            response = try client.fetchAll(HTTPRequest(url: url, acceptCompressed: true), limit: feedLimit)
        } catch {
            throw FetchError(error)
        }
        guard (200..<300).contains(response.head.status) else {
            throw FetchError(
                isTransient: response.head.status >= 500, isUnreachable: false,
                message: "the origin answered HTTP \(response.head.status) for \(url)")
        }
        return response.body
    }

    func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
        var headers: [(name: String, value: String)] = []
        if let etag = validators?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = validators?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let response: HTTPResponse
        do {
            response = try client.fetchAll(
                HTTPRequest(url: url, headers: headers, acceptCompressed: true), limit: feedLimit)
        } catch {
            throw FetchError(error)
        }
        if response.head.status == 304, validators != nil { return .notModified }
        guard (200..<300).contains(response.head.status) else {
            throw FetchError(
                isTransient: response.head.status >= 500, isUnreachable: false,
                message: "the origin answered HTTP \(response.head.status) for \(url)")
        }
        return .body(response.body, etag: response.head.etag, lastModified: response.head.lastModified)
    }
}

/// Forwards HTTP callbacks to a fetch sink.
private final class SinkAdapter: HTTPTransferDelegate {
    let sink: any FetchSink

    init(sink: any FetchSink) { self.sink = sink }

    func receive(head: HTTPResponseHead) -> Bool {
        let range = head.contentRange
        let fetchHead = FetchHead(
            status: head.status, rangeFirst: range.flatMap { $0.first >= 0 ? $0.first : nil },
            rangeLast: range.flatMap { $0.last >= 0 ? $0.last : nil }, total: range?.total,
            contentLength: head.contentLength, etag: head.etag, lastModified: head.lastModified,
            effectiveURL: head.effectiveURL)
        return sink.receive(head: fetchHead)
    }

    func receive(body: UnsafeRawBufferPointer) -> Bool {
        sink.receive(body: body)
    }

    func complete(error: HTTPError?) {
        sink.complete(error: error.map(FetchError.init))
    }
}

extension FetchError {
    init(_ error: HTTPError) {
        self.init(
            isTransient: error.isTransient, isUnreachable: error.kind == .unreachable,
            message: error.description)
    }
}
