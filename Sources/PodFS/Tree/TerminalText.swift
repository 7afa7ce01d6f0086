/// Text from outside (feed titles, an origin's messages) made safe to print
/// on a terminal.
///
/// A cleaned string holds no control character (C0, DEL, C1: a C1 `CSI`
/// starts an escape sequence as surely as `ESC [` does), no format character
/// (bidi overrides and isolates, zero-width spaces, tag characters)
/// and no line or paragraph separator, so it cannot move the cursor, change
/// colours or make text display in an order other than its own. The rule is
/// the one names follow (`Naming`), by Unicode's properties.
public enum TerminalText {
    // MARK: - Public methods

    /// `text` with tabs and line breaks as spaces and the other characters
    /// described on the type removed.
    public static func clean(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "\t" || scalar == "\n" || scalar == "\r" || isLineBreak(scalar) {
                scalars.append(" ")
            } else if !isUnsafe(scalar) {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// JSON text with each character `clean` would remove written as a
    /// `\uXXXX` escape (a surrogate pair beyond U+FFFF). JSON's structure is
    /// ASCII, so these characters only occur inside strings, where the
    /// escape means the same character: the result is valid JSON with the
    /// same content, and printing it moves no cursor.
    public static func escapingJSON(_ json: String) -> String {
        var result = ""
        result.reserveCapacity(json.utf8.count)
        for scalar in json.unicodeScalars {
            guard scalar.value >= 0x7F, isUnsafe(scalar) || isLineBreak(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            if scalar.value > 0xFFFF {
                let offset = scalar.value - 0x1_0000
                result += escape(0xD800 + (offset >> 10)) + escape(0xDC00 + (offset & 0x3FF))
            } else {
                result += escape(scalar.value)
            }
        }
        return result
    }

    // MARK: - Private methods

    /// Control (Cc) and format (Cf) characters, and bidi controls. The
    /// zero-width joiner and non-joiner stay: they join emoji and the
    /// letters of some scripts, and move nothing on a terminal.
    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "\u{200C}" || scalar == "\u{200D}" { return false }
        switch scalar.properties.generalCategory {
        case .control, .format: return true
        default: return scalar.properties.isBidiControl
        }
    }

    /// U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR.
    private static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    private static func escape(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
