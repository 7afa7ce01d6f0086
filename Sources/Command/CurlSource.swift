import Feeds
import Foundation
import HTTPClient
import PodFS
import ReadRules

/// Wires the HTTP client into the reader's and the catalogue's small
/// network protocols.
///
/// Feed URLs are the user's own (any address); every other URL is fetched
/// under the address zone of the feed that listed it (see `FeedZones`).
struct CurlSource: RangeSource, FeedSource {
    let client: HTTPClient
    /// The largest feed body accepted, in bytes.
    let feedLimit: Int
    /// Who wrote which URL; fed by feed fetches, the catalogue and redirects.
    let zones: FeedZones

    /// Seconds a feed's host has to accept the connection.
    static let feedConnectTimeout = 10
    /// Seconds a whole feed fetch may take: a host that accepts and never
    /// answers holds one fetch slot this long, and nothing else.
    static let feedTotalTimeout = 60

    func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
        _ = start(url: url, range: range, validator: validator, listedBy: listedBy, sink: sink)
    }

    func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink
    ) -> FetchStopper? {
        start(url: url, range: range, validator: validator, listedBy: listedBy, sink: sink, stall: nil)
    }

    func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink,
        stalledAfter seconds: Int
    ) -> FetchStopper? {
        start(url: url, range: range, validator: validator, listedBy: listedBy, sink: sink, stall: seconds)
    }

    private func start(
        url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink, stall: Int?
    ) -> FetchStopper? {
        let issuer = zones.issuer(of: url, listedBy: listedBy)
        let request = HTTPRequest(url: url, range: range, ifRange: validator, issuer: issuer, stallTimeout: stall)
        let id = client.start(
            request, delegate: SinkAdapter(sink: sink, requestedURL: url, requestedIssuer: issuer, zones: zones))
        return { [client] in client.cancel(id) }
    }

    func fetchFeed(url: String) throws(FetchError) -> [UInt8] {
        switch try fetchFeed(url: url, validators: nil) {
        case .body(let body, _, _): return body
        case .notModified: return []  // only an answer to validators, and none were sent
        }
    }

    func fetchFeed(url: String, validators: FeedValidators?) throws(FetchError) -> FeedResponse {
        try fetchFeed(url: url, validators: validators, subscribedAs: url).response
    }

    func fetchFeed(url: String, validators: FeedValidators?, subscribedAs: String) throws(FetchError) -> FeedAnswer {
        var headers: [(name: String, value: String)] = []
        if let etag = validators?.etag { headers.append(("If-None-Match", etag)) }
        if let lastModified = validators?.lastModified { headers.append(("If-Modified-Since", lastModified)) }
        let response: HTTPResponse
        do {
            response = try client.fetchAll(
                HTTPRequest(
                    url: url, headers: headers, acceptCompressed: true, issuer: zones.issuer(ofFeed: subscribedAs),
                    connectTimeout: Self.feedConnectTimeout, totalTimeout: Self.feedTotalTimeout),
                limit: feedLimit)
        } catch let error where error.kind == .tooLarge {
            throw FetchError(
                isTransient: false, isUnreachable: false,
                message: "the feed is larger than the limit of \(Self.describe(bytes: feedLimit)) and was not "
                    + "downloaded further; if it is genuine, mount with --max-feed-size (e.g. "
                    + "--max-feed-size \(max(2 * feedLimit / (1 << 20), 1))M or -o max_feed_size=...)")
        } catch {
            throw FetchError(error)
        }
        if let zone = response.head.connectedZone {
            // The catalogue knows the feed by the URL it was subscribed with.
            zones.recordFeed(url: url, zone: zone)
            zones.recordFeed(url: subscribedAs, zone: zone)
        }
        let movedTo = response.head.permanentURL
        let answer = OriginAnswer(
            status: response.head.status, retryAfter: response.head.header("retry-after"),
            now: Date().timeIntervalSince1970)
        switch answer {
        case .usable: break
        case .notModified where validators != nil: return FeedAnswer(response: .notModified, movedTo: movedTo)
        case .notModified, .transient, .final:
            var failure = answer.failure(status: response.head.status, url: url)
            if let retryAfter = answer.retryAfter {
                failure.message += " and asks to be asked again in \(Int(retryAfter.rounded(.up))) s"
            }
            throw failure
        }
        return FeedAnswer(
            response: .body(response.body, etag: response.head.etag, lastModified: response.head.lastModified),
            movedTo: movedTo)
    }

    /// `64 MiB`, `512 KiB` or `100 bytes`.
    static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

/// Forwards HTTP callbacks to a fetch sink.
private final class SinkAdapter: HTTPTransferDelegate {
    let sink: any FetchSink
    let requestedURL: String
    /// Whose rules the requested URL was fetched under.
    let requestedIssuer: URLIssuer
    let zones: FeedZones

    init(sink: any FetchSink, requestedURL: String, requestedIssuer: URLIssuer, zones: FeedZones) {
        self.sink = sink
        self.requestedURL = requestedURL
        self.requestedIssuer = requestedIssuer
        self.zones = zones
    }

    func receive(head: HTTPResponseHead) -> Bool {
        if head.effectiveURL != requestedURL {
            // The reader goes straight to the effective URL next time; it
            // keeps the zone of the server that redirected there.
            zones.recordRedirect(effectiveURL: head.effectiveURL, issuer: head.issuer)
        }
        let range = head.contentRange
        let fetchHead = FetchHead(
            status: head.status, rangeFirst: range.flatMap { $0.first >= 0 ? $0.first : nil },
            rangeLast: range.flatMap { $0.last >= 0 ? $0.last : nil }, total: range?.total,
            contentLength: head.contentLength, etag: head.etag,
            lastModified: OriginVersion.validating(
                lastModified: head.lastModified, etag: head.etag, date: head.header("date"),
                receivedAt: Date().timeIntervalSince1970),
            effectiveURL: head.effectiveURL, retryAfter: head.header("retry-after"),
            issuer: Self.zoneName(
                head.effectiveURL == requestedURL ? requestedIssuer : zones.issuer(of: head.effectiveURL, listedBy: nil)),
            redirects: head.redirectStatuses.count)
        return sink.receive(head: fetchHead)
    }

    func receive(body: UnsafeRawBufferPointer) -> Bool {
        sink.receive(body: body)
    }

    func bodyBatchEnded() {
        sink.bodyBatchEnded()
    }

    /// A server issuer's zone as the index keeps it (`nil` for the user).
    private static func zoneName(_ issuer: URLIssuer) -> String? {
        if case .server(let zone) = issuer { return zone.rawValue }
        return nil
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

extension CurlSource {
    /// A whole document (a show's web page, a feed it links) fetched under
    /// the zone of whoever wrote its URL, with the zone it came from; what
    /// `SubscriptionResolver` fetches, in a mount and in a command alike.
    func page(url: String, issuer: URLIssuer) -> SubscriptionResolver.Page {
        let response: HTTPResponse
        do {
            response = try client.fetchAll(
                HTTPRequest(
                    url: url, acceptCompressed: true, issuer: issuer, connectTimeout: Self.feedConnectTimeout,
                    totalTimeout: Self.feedTotalTimeout),
                limit: feedLimit)
        } catch {
            return .failed(reason: FetchError(error).message)
        }
        guard (200..<300).contains(response.head.status) else {
            let failure = OriginAnswer(status: response.head.status, retryAfter: nil, now: Date().timeIntervalSince1970)
                .failure(status: response.head.status, url: url)
            return .failed(reason: failure.message)
        }
        return .body(response.body, zone: response.head.connectedZone)
    }
}
