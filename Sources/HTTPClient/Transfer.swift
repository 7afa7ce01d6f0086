internal import CCurl
internal import Feeds
import Glibc
import Locking

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

    private let policy: AddressPolicy
    /// Where the easy handle goes back when the transfer is done.
    private let handles: EasyHandles
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var pendingHeaders: [(name: String, value: String)] = []
    /// The status of the response whose headers are arriving (`nil` when
    /// its status line could not be read).
    private var pendingStatus: Int?
    /// The statuses of the redirects followed so far, in order.
    private var redirectStatuses: [Int] = []
    private var headDelivered = false
    private var aborted = false
    /// Whether body bytes arrived since the last `endBodyBatch()`.
    private var bodySinceBatch = false
    /// Who wrote the URL of the next hop: the request's issuer, then after
    /// each request the server that answered it (its `Location` is the
    /// next hop).
    private var nextIssuer: URLIssuer
    /// Who wrote the URL of the hop now being answered.
    private var hopIssuer: URLIssuer
    /// The zone of the address the current hop is connected to.
    private var connectedZone: AddressZone?
    /// Why the address-zone rule or the redirect rule stopped this
    /// transfer; the error it ends with says so.
    private var refusal: String?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    // MARK: - Init and deinit

    init?(
        request: HTTPRequest, delegate: any HTTPTransferDelegate, id: UInt64, policy: AddressPolicy,
        handles: EasyHandles
    ) {
        guard let easy = handles.take() else { return nil }
        self.handles = handles
        self.request = request
        self.delegate = delegate
        self.easy = easy
        self.id = id
        self.policy = policy
        self.nextIssuer = request.issuer
        self.hopIssuer = request.issuer
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        handles.giveBack(easy)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    // MARK: - Configuration

    /// Seconds without a byte before a transfer fails as stalled: 30, or the
    /// hidden `PODFS_LOW_SPEED_TIME` (1-30) that lets tests meet a stall quickly.
    static let lowSpeedTime: Int = {
        guard let text = getenv("PODFS_LOW_SPEED_TIME"), let value = Int(String(cString: text)),
            (1...30).contains(value)
        else { return 30 }
        return value
    }()

    /// libcurl's receive buffer for a request of `range`: 512 KiB, so a
    /// long body comes in few pieces; a quarter of a short range (at least
    /// 16 KiB), so its first bytes are handed over before the rest is
    /// received and copied (a probe's reader waits for its first 4 KiB).
    static func receiveBuffer(for range: Range<Int64>?) -> Int {
        let most = 512 * 1024
        guard let range, range.count < Int64(most) else { return most }
        return max(16 * 1024, Int(range.count) / 4)
    }

    /// Sets every option; the `userdata` pointer is this object, kept alive
    /// by the client until the transfer completes.
    func configure(userdata: UnsafeMutableRawPointer, userAgent: String, proxy: HTTPProxy?) {
        podfs_curl_easy_setopt_str(easy, CURLOPT_URL, request.url)
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_PRIVATE, userdata)
        podfs_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        podfs_curl_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        podfs_curl_easy_setopt_str(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        podfs_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        podfs_curl_easy_setopt_long(easy, CURLOPT_MAXREDIRS, 10)
        podfs_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, request.connectTimeout)
        if let total = request.totalTimeout {
            podfs_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT, total)
        }
        // A stalled body (less than 1 byte/s for 30 s) fails instead of hanging.
        podfs_curl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
        podfs_curl_easy_setopt_long(
            easy, CURLOPT_LOW_SPEED_TIME, min(request.stallTimeout ?? Self.lowSpeedTime, Self.lowSpeedTime))
        podfs_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        podfs_curl_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, Self.receiveBuffer(for: request.range))
        podfs_curl_easy_setopt_str(easy, CURLOPT_USERAGENT, userAgent)
        // The proxy the user asked for, else none: "" also makes libcurl
        // ignore http_proxy, https_proxy and ALL_PROXY, which would void the
        // address-zone rule (it would see only the proxy's address). An
        // empty no-proxy list likewise ignores NO_PROXY: with a proxy, every
        // request goes through it.
        podfs_curl_easy_setopt_str(easy, CURLOPT_PROXY, proxy?.url ?? "")
        podfs_curl_easy_setopt_str(easy, CURLOPT_NOPROXY, "")
        // A proxy's answer to CONNECT is no response of ours.
        podfs_curl_easy_setopt_long(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        if let range = request.range {
            podfs_curl_easy_setopt_str(easy, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound - 1)")
        }
        if let body = request.body {
            // The size first: COPYPOSTFIELDS copies that many bytes.
            podfs_curl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
            body.withUnsafeBufferPointer { bytes in
                // An empty array may have no storage; libcurl needs a pointer.
                let pointer = UnsafeMutableRawPointer(mutating: bytes.baseAddress) ?? UnsafeMutableRawPointer(errorBuffer)
                podfs_curl_easy_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, pointer)
            }
        }
        switch request.credentials {
        case .basic(let user, let password): podfs_curl_easy_set_basic_auth(easy, user, password)
        case .netrc(let user): podfs_curl_easy_set_basic_auth(easy, user, nil)
        case nil: break
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
            return transfer.receiveHeaderLine(bytes) ? size * count : 0
        }
        podfs_curl_easy_setopt_datacb(easy, CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
            let transfer = Transfer.from(userdata: userdata)
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return transfer.receiveBody(bytes) ? size * count : 0
        }
        // The address-zone rule at connect time: on every address libcurl
        // is about to connect to (after DNS, for each hop), and again before
        // each request, which also covers a reused connection.
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, userdata)
        podfs_curl_easy_setopt_opensocketcb(easy) { userdata, _, address in
            guard let address else { return CURL_SOCKET_BAD }
            return Transfer.from(userdata: userdata).openSocket(address)
        }
        podfs_curl_easy_setopt_ptr(easy, CURLOPT_PREREQDATA, userdata)
        podfs_curl_easy_setopt_prereqcb(easy) { userdata, primaryIP, _, _, _ in
            let ip = primaryIP.map { String(cString: $0) } ?? ""
            return Transfer.from(userdata: userdata).admitRequest(primaryIP: ip)
                ? Int32(CURL_PREREQFUNC_OK) : Int32(CURL_PREREQFUNC_ABORT)
        }
    }

    // MARK: - Callbacks (network thread)

    static func from(userdata: UnsafeMutableRawPointer?) -> Transfer {
        Unmanaged<Transfer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Opens the socket for a connection to `address` unless the rule
    /// forbids it (then nothing is sent to it, not even a SYN).
    private func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var raw = [UInt8](repeating: 0, count: 16)
        let count = Int(podfs_curl_sockaddr_ip(address, &raw))
        let verdict: AddressPolicy.Verdict
        if let ip = IPAddress(bytes: Array(raw.prefix(count))) {
            verdict = policy.check(ip, from: nextIssuer)
        } else {
            verdict = policy.allowPrivate
                ? .allowed(.reserved)
                : .refused(.reserved, "podfs connects only to IPv4 and IPv6 addresses")
        }
        if case .refused(_, let message) = verdict {
            refusal = message
            return CURL_SOCKET_BAD
        }
        return podfs_curl_open_socket(address)
    }

    /// Checks the address a request is about to go out on (new or reused
    /// connection); the server there issues the next hop's URL.
    private func admitRequest(primaryIP: String) -> Bool {
        guard let ip = IPAddress(numeric: primaryIP) else {
            if policy.allowPrivate { return true }
            refusal = "podfs could not tell which address it is connected to (\(primaryIP))"
            return false
        }
        switch policy.check(ip, from: nextIssuer) {
        case .refused(_, let message):
            refusal = message
            return false
        case .allowed(let zone):
            // Another address of the same name may have been refused on
            // the way here; what matters now is the one in use.
            refusal = nil
            hopIssuer = nextIssuer
            connectedZone = zone
            nextIssuer = .server(zone)
            return true
        case .atConnect, .unparsable:
            return false
        }
    }

    private func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // Read as bytes, as HTTP writes them: a String's characters would
        // cost grapheme breaking on every line of every response ("\r\n"
        // is even one Character, which String.hasSuffix("\n") misses).
        var count = bytes.count
        while count > 0, bytes[count - 1] == 0x0a || bytes[count - 1] == 0x0d { count -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
        if line.isEmpty {
            // A head ends. A 2xx is the final response (libcurl follows
            // only 3xx, and a proxy's answer to CONNECT is not passed
            // here): it goes over now, not with the first body byte, so
            // that a head whose body is held back still tells its length
            // and validators (a size check's, `Fetch.sizeCheckStall`).
            // Only with Basic auth (shim.h), as now: under a multi-pass
            // scheme (Digest, NTLM) libcurl sends a POST again after a 2xx.
            guard !headDelivered, let status = pendingStatus, (200...299).contains(status) else { return true }
            var code = 0
            podfs_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
            // libcurl's own reading of the head agrees that it is the response.
            guard code == status else { return true }
            return deliverHead()
        }
        if line.starts(with: "HTTP/".utf8) {
            // A new response in a redirect chain (or after 100-continue).
            if let previous = pendingStatus, RedirectRule.isFollowed(status: previous) {
                redirectStatuses.append(previous)
            }
            pendingHeaders.removeAll(keepingCapacity: true)
            pendingStatus = HTTPResponseHead.status(ofStatusLine: String(decoding: line, as: UTF8.self))
            return true
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return true }
        // Names are kept in lower case (`HTTPResponseHead.header`).
        let name = String(unsafeUninitializedCapacity: colon) { name in
            for index in 0..<colon { name[index] = line[index].asciiLowercased }
            return colon
        }
        // A field value has no white space at either end (RFC 9110, 5.5).
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var lower = colon + 1
        var upper = line.count
        while lower < upper, isBlank(line[lower]) { lower += 1 }
        while upper > lower, isBlank(line[upper - 1]) { upper -= 1 }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: line[lower..<upper]), as: UTF8.self)
        if name == "location", RedirectRule.isFollowed(status: pendingStatus),
            let problem = RedirectRule.problem(location: value)
        {
            // The Location may carry the feed's token on to the next hop.
            let shown = FeedURL.redacted(String(value.prefix(200)), for: .log)
            refusal = "podfs does not follow this redirect: \(problem) (Location: \(shown.debugDescription))"
            return false
        }
        pendingHeaders.append((name: name, value: value))
        return true
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
        var head = HTTPResponseHead(
            status: status, headers: pendingHeaders, effectiveURL: effective, connectedZone: connectedZone,
            issuer: hopIssuer)
        head.redirectStatuses = redirectStatuses
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
        if let refusal {
            return HTTPError(kind: .refused, message: refusal, url: request.url)
        }
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

/// Easy handles kept for the next transfers: one made anew costs
/// `curl_easy_init` (an allocation of several KiB, set to its defaults) on
/// the thread that starts the transfer, which for a probe is the FUSE
/// worker whose open waits. A handle given back is reset to libcurl's
/// defaults (`curl_easy_reset`), so nothing of a transfer's options reaches
/// the next; what a reset keeps (the DNS cache, cookies, which podfs never
/// turns on) is the multi handle's anyway. At most `kept` wait.
final class EasyHandles: Sendable {
    /// A handle no transfer holds: only this pool touches it.
    private struct Idle: @unchecked Sendable {
        let easy: UnsafeMutableRawPointer
    }

    private let free = Locked<[Idle]>([])
    private let kept: Int

    init(kept: Int = 16) {
        self.kept = kept
    }

    deinit {
        free.withLock { handles in
            for idle in handles { curl_easy_cleanup(idle.easy) }
        }
    }

    /// A handle with libcurl's default options; `nil` if none can be made.
    func take() -> UnsafeMutableRawPointer? {
        free.withLock { $0.popLast() }?.easy ?? curl_easy_init()
    }

    /// Takes back a handle no multi handle holds any more.
    func giveBack(_ easy: UnsafeMutableRawPointer) {
        curl_easy_reset(easy)
        let kept = free.withLock { handles in
            guard handles.count < self.kept else { return false }
            handles.append(Idle(easy: easy))
            return true
        }
        if !kept { curl_easy_cleanup(easy) }
    }
}
