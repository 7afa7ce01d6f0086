/// Text made safe to place inside an XML 1.0 document podfs writes.
///
/// Whatever a caller passes, the result is well-formed where it is put and
/// reads back as the same string, except for the characters XML 1.0 cannot
/// hold at all (C0 controls other than tab, line feed and carriage return,
/// U+FFFE and U+FFFF): text loses them, and a URL gets U+FFFD in their
/// place, which `FeedURL` refuses, so that a URL is never read back as
/// another one glued from its two halves.
enum XMLEscaping {
    // MARK: - Internal methods

    /// `value` for a double-quoted attribute: `&`, `<`, `>` and `"` as
    /// entities, tab and line ends as character references (a parser would
    /// otherwise read them as spaces). With `asciiOnly`, every non-ASCII
    /// character is a character reference too, for documents in a legacy
    /// encoding. With `isURL`, a character XML cannot hold becomes U+FFFD.
    static func attributeValue(_ value: String, asciiOnly: Bool = false, isURL: Bool = false) -> String {
        var output = ""
        output.reserveCapacity(value.utf8.count)
        for var scalar in value.unicodeScalars {
            if !isXMLCharacter(scalar) {
                guard isURL else { continue }
                scalar = "\u{FFFD}"
            }
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "\t", "\n", "\r": output += reference(scalar)
            default: output += asciiOnly && !scalar.isASCII ? reference(scalar) : String(scalar)
            }
        }
        return output
    }

    /// `text` for element content: `&`, `<` and `>` as entities (the last
    /// so that `]]>` never appears).
    static func text(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars where isXMLCharacter(scalar) {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    // MARK: - Private methods

    /// XML 1.0's `Char` production, for the scalars a `String` can hold.
    private static func isXMLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: return true
        case 0x00..<0x20, 0xFFFE, 0xFFFF: return false
        default: return true
        }
    }

    private static func reference(_ scalar: Unicode.Scalar) -> String {
        "&#x" + String(scalar.value, radix: 16, uppercase: true) + ";"
    }
}
