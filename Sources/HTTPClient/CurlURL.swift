internal import CCurl

/// URLs read by libcurl's own parser, so podfs never judges a URL by a
/// second reading that libcurl might not share.
enum CurlURL {
    /// One part of `url` as libcurl reads it; `nil` when libcurl refuses
    /// the URL or it has no such part.
    static func part(_ part: CURLUPart, of url: String) -> String? {
        guard let pointer = podfs_curl_url_part(url, part) else { return nil }
        defer { curl_free(pointer) }
        return String(cString: pointer)
    }
}
