/// What a redirect's `Location` may be: an http or https URL (absolute,
/// scheme-relative or relative) with no raw white space, control character
/// or backslash. libcurl would quietly percent-encode a space and read a
/// backslash its own way; a server that sends either is not trusted with
/// the choice, and the transfer stops before following it.
public enum RedirectRule {
    /// Whether libcurl follows the `Location` of a response with this
    /// status: any 3xx (CURLOPT_FOLLOWLOCATION), not only 301, 302, 303,
    /// 307 and 308. A status line podfs could not read counts as one, so
    /// the rule errs towards checking.
    public static func isFollowed(status: Int?) -> Bool {
        guard let status else { return true }
        return (300...399).contains(status)
    }

    /// Why `location` must not be followed, or `nil` when it may.
    public static func problem(location: String) -> String? {
        var value = Substring(location)
        while value.last == " " || value.last == "\t" { value = value.dropLast() }
        if value.isEmpty { return "its Location is empty" }
        for byte in value.utf8 {
            if byte == 0x20 { return "its Location has a raw space" }
            if byte < 0x20 || byte == 0x7F { return "its Location has a control character" }
            if byte == UInt8(ascii: "\\") { return "its Location has a backslash" }
        }
        // RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        if let colon = value.firstIndex(of: ":"), let first = value.first, first.isASCII, first.isLetter {
            let scheme = value[..<colon]
            let isScheme = scheme.allSatisfy {
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".")
            }
            if isScheme, !["http", "https"].contains(scheme.lowercased()) {
                return "its Location uses the \(scheme.lowercased()): scheme; only http and https are followed"
            }
        }
        return nil
    }
}
