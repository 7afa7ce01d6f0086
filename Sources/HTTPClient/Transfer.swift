internal import CCurl
import Glibc

/// One libcurl easy handle and the delegate it feeds.
///
/// Created on any thread, but after `HTTPClient.start` hands it to the network
/// thread, only that thread touches it; `cancel()` goes through the client.
final class Transfer {
    // MARK: - Properties

    let request: HTTPRequest
    let delegate: any HTTPTransferDelegate
    let easy: UnsafeMutableRawPointer
    let id: UInt64

    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var pendingHeaders: [(name: String, value: String)] = []
    private var headDelivered = false
    private var aborted = false
    /// Whether body bytes arrived since the last `endBodyBatch()`.
    private var bodySinceBatch = false
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    // MARK: - Init and deinit

    init?(request: HTTPRequest, delegate: any HTTPTransferDelegate, id: UInt64) {
        guard let easy = curl_easy_init() else { return nil }
        self.request = request
        self.delegate = delegate
        self.easy = easy
        self.id = id
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(easy)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    // MARK: - Configuration

    /// Sets every option; the `userdata` pointer is this object, kept alive
    /// by the client until the transfer completes.
    func configure(userdata: UnsafeMutableRawPointer, userAgent: String) {
        podfs_curl_easy_setopt_str(easy, CURLOPT_URL, request.url)
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_PRIVATE, userdata)
        podfs_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        podfs_curl_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        podfs_curl_easy_setopt_str(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        podfs_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        podfs_curl_easy_setopt_long(easy, CURLOPT_MAXREDIRS, 10)
        podfs_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, 15)
        // A stalled body (less than 1 byte/s for 30 s) fails instead of hanging.
        podfs_curl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        podfs_curl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, 30)
        podfs_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        podfs_curl_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, 512 * 1024)
        podfs_curl_easy_setopt_str(easy, CURLOPT_USERAGENT, userAgent)
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        if let range = request.range {
            podfs_curl_easy_setopt_str(easy, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound - 1)")
        }
        if request.acceptCompressed {
            podfs_curl_easy_setopt_str(easy, CURLOPT_ACCEPT_ENCODING, "")
        }
        var headers = request.headers
        if let ifRange = request.ifRange, request.range != nil {
            headers.append((name: "If-Range", value: ifRange))
        }
        for header in headers {
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        if let headerList {
            podfs_curl_easy_setopt_ptr(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headerList))
        }
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, userdata)
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, userdata)
        podfs_curl_easy_setopt_datacb(easy, CURLOPT_HEADERFUNCTION) { data, size, count, userdata in
            let transfer = Transfer.from(userdata: userdata)
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            transfer.receiveHeaderLine(bytes)
            return size * count
        }
        podfs_curl_easy_setopt_datacb(easy, CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
            let transfer = Transfer.from(userdata: userdata)
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return transfer.receiveBody(bytes) ? size * count : 0
        }
    }

    // MARK: - Callbacks (network thread)

    static func from(userdata: UnsafeMutableRawPointer?) -> Transfer {
        Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        // Trim CR/LF as bytes: "\r\n" is one Character in Swift, so
        // String.hasSuffix("\n") would not see it.
        var count = bytes.count
        while count > 0, bytes[count - 1] == 0x0a || bytes[count - 1] == 0x0d { count -= 1 }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<count]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // A new response in a redirect chain (or after 100-continue).
            pendingHeaders.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        var value = line[line.index(after: colon)...]
        while value.first == " " || value.first == "\t" { value = value.dropFirst() }
        pendingHeaders.append((name: name, value: String(value)))
    }

    private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if aborted { return false }
        if !headDelivered, !deliverHead() { return false }
        if !delegate.receive(body: bytes) {
            aborted = true
            return false
        }
        bodySinceBatch = true
        return true
    }

    /// Tells the delegate that the bytes libcurl had were all handed over
    /// (called after each round of `curl_multi_perform`).
    func endBodyBatch() {
        guard bodySinceBatch, !aborted else { return }
        bodySinceBatch = false
        delegate.bodyBatchEnded()
    }

    /// Hands the final response's head to the delegate (once).
    private func deliverHead() -> Bool {
        headDelivered = true
        var status = 0
        podfs_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var urlPointer: UnsafeMutablePointer<CChar>?
        podfs_curl_easy_getinfo_str(easy, CURLINFO_EFFECTIVE_URL, &urlPointer)
        let effective = urlPointer.map { String(cString: $0) } ?? request.url
        let head = HTTPResponseHead(status: status, headers: pendingHeaders, effectiveURL: effective)
        if !delegate.receive(head: head) {
            aborted = true
            return false
        }
        return true
    }

    /// Called by the client when libcurl reports the transfer done.
    func finish(code: CURLcode) {
        if code == CURLE_OK, !headDelivered {
            // A body-less response (304, 416, HEAD-like): deliver its head now.
            if !deliverHead() {
                delegate.complete(error: HTTPError(kind: .cancelled, message: "transfer aborted", url: request.url))
                return
            }
        }
        if code == CURLE_OK {
            delegate.complete(error: nil)
            return
        }
        delegate.complete(error: error(for: code))
    }

    /// Ends the transfer without libcurl having finished it (cancel, shutdown).
    func finishCancelled() {
        delegate.complete(error: HTTPError(kind: .cancelled, message: "transfer cancelled", url: request.url))
    }

    private func error(for code: CURLcode) -> HTTPError {
        let text = String(cString: errorBuffer)
        let detail = text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
        let kind: HTTPError.Kind
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY:
            kind = .unreachable
        case CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE,
            CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            kind = .interrupted
        case CURLE_TOO_MANY_REDIRECTS, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            kind = .refused
        case CURLE_WRITE_ERROR where aborted:
            kind = .cancelled
        default:
            kind = .other
        }
        return HTTPError(kind: kind, message: "HTTP transfer failed: \(detail)", url: request.url)
    }
}
