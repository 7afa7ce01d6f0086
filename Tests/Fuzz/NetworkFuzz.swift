// libFuzzer target for what podfs reads from the network besides feeds
// (scripts/fuzz network), against the real modules: the first byte picks
// the parser, the rest is its input.
//   0  HTTPResponseHead.status(ofStatusLine:)
//   1  Content-Range, through HTTPResponseHead.contentRange
//   2  Content-Length, through HTTPResponseHead.contentLength (and decimal)
//   3  RedirectRule.problem(location:) and isFollowed(status:)
//   4  AddressPolicy.host(of:) (libcurl's URL parser), IPAddress(numeric:)
//      and AddressPolicy.check(url:from:)
//   5  CacheSize (`--cache-size`, `-o cache_size=`)
//   6  FetchHead.retryDelay(retryAfter:now:) (Retry-After), the first 8
//      bytes after the selector being `now` as a Double's bits
// Each checks what its parser promises, not only that it does not crash.

import HTTPClient
import PodFS
import RangeCache
import ReadRules

/// What is wrong with one input, or `nil`. The target's entry file crashes
/// on a finding (for libFuzzer).
func networkFuzzFinding(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String? {
    guard let data, size >= 1 else { return nil }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let rest = Array(bytes.dropFirst())
    let text = String(decoding: rest, as: UTF8.self)
    switch bytes[0] % 7 {
    case 0: return statusLine(text)
    case 1: return contentRange(text)
    case 2: return contentLength(text)
    case 3: return redirect(text, status: rest.first.map { Int($0) * 4 })
    case 4: return address(text)
    case 5: return cacheSize(text)
    default: return retryAfter(rest)
    }
}

private func statusLine(_ line: String) -> String? {
    guard let status = HTTPResponseHead.status(ofStatusLine: line) else { return nil }
    guard (0...999).contains(status), line.hasPrefix("HTTP/") else {
        return "status \(status) from the status line \(line.debugDescription)"
    }
    return nil
}

private func contentRange(_ value: String) -> String? {
    let head = HTTPResponseHead(status: 206, headers: [("Content-Range", value)], effectiveURL: "http://x.example/")
    guard let range = head.contentRange else { return nil }
    let largest = HTTPResponseHead.largestPosition
    if range.first == -1 {
        guard range.last == -1, let total = range.total, (0...largest).contains(total) else {
            return "unsatisfied range \(range) from \(value.debugDescription)"
        }
        return nil
    }
    guard range.first >= 0, range.first <= range.last, range.last <= largest else {
        return "range \(range) from \(value.debugDescription)"
    }
    if let total = range.total, !(range.last < total && total <= largest) {
        return "range \(range) beyond its total from \(value.debugDescription)"
    }
    // What it read, written back the canonical way, reads the same.
    let canonical = "bytes \(range.first)-\(range.last)/" + (range.total.map { String($0) } ?? "*")
    guard HTTPResponseHead.parseContentRange(canonical) == range else {
        return "\(canonical) does not read back as \(range)"
    }
    return nil
}

private func contentLength(_ value: String) -> String? {
    let head = HTTPResponseHead(status: 200, headers: [("Content-Length", value)], effectiveURL: "http://x.example/")
    let largest = HTTPResponseHead.largestPosition
    if let length = head.contentLength, !(0...largest).contains(length) {
        return "Content-Length \(length) from \(value.debugDescription)"
    }
    if let decimal = HTTPResponseHead.decimal(value) {
        // Only plain digits: the same value as Int64 reads them.
        guard value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), Int64(value) == decimal else {
            return "decimal \(decimal) from \(value.debugDescription)"
        }
    }
    return nil
}

private func redirect(_ location: String, status: Int?) -> String? {
    _ = RedirectRule.isFollowed(status: status)
    guard RedirectRule.problem(location: location) == nil else { return nil }
    // Followed: no raw space, control character or backslash before the
    // trailing blanks, and not empty.
    var value = Substring(location)
    while value.last == " " || value.last == "\t" { value = value.dropLast() }
    if value.isEmpty || value.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) {
        return "the Location \(location.debugDescription) would be followed"
    }
    return nil
}

private func address(_ url: String) -> String? {
    if let host = AddressPolicy.host(of: url) {
        guard !host.isEmpty else { return "an empty host from \(url.debugDescription)" }
        if let address = IPAddress(numeric: host), IPAddress(numeric: address.description) != address {
            return "\(address) does not read back from \(host.debugDescription)"
        }
    }
    for issuer in [URLIssuer.user, .server(.global), .server(.loopback)] {
        let verdict = AddressPolicy().check(url: url, from: issuer)
        if case .refused(_, let why) = verdict, why.isEmpty {
            return "a refusal without a reason for \(url.debugDescription)"
        }
    }
    return nil
}

private func cacheSize(_ text: String) -> String? {
    guard let size = try? CacheSize(text) else { return nil }
    guard let bytes = size.bytes else { return nil }
    guard bytes >= 1, Double(bytes) < 9e18 else { return "cache size \(bytes) from \(text.debugDescription)" }
    guard (try? CacheSize(String(bytes)))?.bytes == bytes else {
        return "\(bytes) (from \(text.debugDescription)) does not read back"
    }
    return nil
}

private func retryAfter(_ rest: [UInt8]) -> String? {
    var bits: UInt64 = 0
    for byte in rest.prefix(8) { bits = bits << 8 | UInt64(byte) }
    // Mostly a plausible clock; sometimes any Double at all.
    let now = rest.count > 8 && rest[0] & 1 == 1 ? Double(bitPattern: bits) : Double(bits % 4_102_444_800)
    let value = String(decoding: rest.dropFirst(min(8, rest.count)), as: UTF8.self)
    guard let delay = FetchHead.retryDelay(retryAfter: value, now: now) else { return nil }
    guard delay.isFinite, delay >= 0, delay <= FetchHead.longestRetryDelay else {
        return "a delay of \(delay) s for Retry-After \(value.debugDescription) at \(now)"
    }
    return nil
}
