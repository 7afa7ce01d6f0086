internal import CXML2

/// Byte-level looks at a document before libxml2 reads it, and the repairs
/// made before a second, recovering parse.
///
/// A repair never invents content: a stray `&` becomes the `&amp;` its
/// writer meant, an HTML entity its character, a byte that is not UTF-8 in a
/// UTF-8 document the windows-1252 character it most likely was. Characters
/// XML forbids (NUL and the other C0 controls) become `damageMarker`, which
/// text drops and which makes any URL containing it invalid, so a NUL never
/// cuts a URL short and never glues two halves together.
enum XMLInput {
    // MARK: - Nested types

    /// The bytes to parse after `repaired(_:)`, with what was changed.
    struct Repair {
        var bytes: [UInt8]

        /// One sentence per kind of change, for `ParsedFeed.warnings`.
        var notes: [String]
    }

    /// How many of each kind of change `repaired(_:)` made.
    private struct RepairCounts {
        var ampersands = 0
        var entities = 0
        var controls = 0
        var undecodable = 0

        /// One sentence per kind of change made, in a fixed order.
        var notes: [String] {
            var notes: [String] = []
            if ampersands > 0 { notes.append("escaped \(ampersands) stray '&'") }
            if entities > 0 { notes.append("decoded \(entities) HTML entities that XML does not define") }
            if controls > 0 {
                notes.append("removed \(controls) characters that XML forbids (NUL, control characters)")
            }
            if undecodable > 0 { notes.append("read \(undecodable) bytes that are not UTF-8 as windows-1252") }
            return notes
        }
    }

    // MARK: - Internal constants

    /// A Unicode noncharacter that stands for a character XML forbids.
    /// `XMLElement` removes it from text; `FeedURL` refuses URLs with it.
    static let damageMarker = Unicode.Scalar(UInt32(0xFDD0))!

    // MARK: - Private constants

    /// `damageMarker` in UTF-8, and as a character reference for documents
    /// in other ASCII-compatible encodings.
    private static let markerUTF8: [UInt8] = [0xEF, 0xB7, 0x90]
    private static let markerReference = Array("&#xFDD0;".utf8)

    /// Names under which documents declare what browsers and feed readers
    /// decode as windows-1252 (the WHATWG Encoding Standard's labels).
    private static let windows1252Labels: Set<String> = [
        "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "cp819", "ibm819",
        "us-ascii", "ascii", "windows-1252", "cp1252", "x-cp1252",
    ]

    /// Bytes windows-1252 leaves undefined; iconv refuses them.
    private static let undefinedInWindows1252: Set<UInt8> = [0x81, 0x8D, 0x8F, 0x90, 0x9D]

    /// windows-1252 0x80...0x9F as Unicode scalars (0 for undefined bytes,
    /// which then read as their Latin-1 C1 control).
    private static let windows1252High: [UInt32] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
        0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
        0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ]

    private static let predefinedEntities: [[UInt8]] = ["amp;", "lt;", "gt;", "quot;", "apos;"].map {
        Array($0.utf8)
    }

    // MARK: - Internal methods

    /// Drops white space before `<?xml` (published feeds have it; strict XML
    /// forbids it), keeping any byte order mark in front.
    static func strippingLeadingWhitespace(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            let rest = bytes.dropFirst(3).drop(while: isSpace)
            return [0xEF, 0xBB, 0xBF] + rest
        }
        for (bom, littleEndian) in [([UInt8](arrayLiteral: 0xFF, 0xFE), true), ([0xFE, 0xFF], false)]
        where bytes.starts(with: bom) && !bytes.starts(with: [0xFF, 0xFE, 0, 0]) {
            var index = 2
            while index + 1 < bytes.count {
                let (low, high) = littleEndian ? (bytes[index], bytes[index + 1]) : (bytes[index + 1], bytes[index])
                guard high == 0, isSpace(low) else { break }
                index += 2
            }
            return bom + bytes[index...]
        }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return [] }
        return first == 0 ? bytes : Array(bytes[first...])
    }

    /// Whether ASCII bytes stand for ASCII characters (UTF-8 and the 8-bit
    /// and multi-byte legacy encodings), as opposed to UTF-16 or UTF-32.
    static func isASCIICompatible(_ bytes: [UInt8]) -> Bool {
        !(bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) || bytes.prefix(4).contains(0))
    }

    /// The encoding named in the XML declaration, lowercased; `nil` when
    /// there is none or the document is not ASCII-compatible.
    static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        guard isASCIICompatible(bytes) else { return nil }
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard bytes[start...].starts(with: "<?xml".utf8) else { return nil }
        let limit = min(bytes.count, start + 512)
        var end = start
        while end + 1 < limit, !(bytes[end] == UInt8(ascii: "?") && bytes[end + 1] == UInt8(ascii: ">")) {
            end += 1
        }
        let declaration = Array(bytes[start..<end])
        let key = Array("encoding".utf8)
        guard var index = firstIndex(of: key, in: declaration) else { return nil }
        index += key.count
        while index < declaration.count, isSpace(declaration[index]) { index += 1 }
        guard index < declaration.count, declaration[index] == UInt8(ascii: "=") else { return nil }
        index += 1
        while index < declaration.count, isSpace(declaration[index]) { index += 1 }
        guard index < declaration.count, declaration[index] == 0x22 || declaration[index] == 0x27 else {
            return nil
        }
        let quote = declaration[index]
        let valueStart = index + 1
        guard let valueEnd = declaration[valueStart...].firstIndex(of: quote) else { return nil }
        return String(decoding: declaration[valueStart..<valueEnd], as: UTF8.self).lowercased()
    }

    /// The encoding libxml2 should use instead of the declared one:
    /// `windows-1252` for a document declared ISO-8859-1 or US-ASCII that
    /// has bytes in 0x80...0x9F, as browsers and feed readers decode it (those
    /// bytes are C1 controls in Latin-1 and `€`, `“`, `’`... in practice).
    static func encodingOverride(_ bytes: [UInt8]) -> String? {
        // A UTF-8 byte order mark outranks the declaration.
        guard !bytes.starts(with: [0xEF, 0xBB, 0xBF]), let declared = declaredEncoding(bytes),
            windows1252Labels.contains(declared)
        else { return nil }
        var needed = false
        for byte in bytes where byte >= 0x80 && byte <= 0x9F {
            if undefinedInWindows1252.contains(byte) { return nil }
            needed = true
        }
        return needed ? "windows-1252" : nil
    }

    /// Looks for `<!ENTITY` before the first element in ASCII-compatible
    /// encodings. The SAX hook catches declarations in any other encoding.
    static func prologDeclaresEntity(_ bytes: [UInt8]) -> Bool {
        let marker = Array("<!ENTITY".utf8)
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "<") {
                if isNameStart(bytes[index + 1]) { return false }
                if bytes[index...].starts(with: marker) { return true }
            }
            index += 1
        }
        return false
    }

    /// The document with the repairs described on the type, for the
    /// recovering parse. UTF-16 documents are returned unchanged: libxml2's
    /// recovery and the damage tracking in `XMLDocument` handle them.
    static func repaired(_ bytes: [UInt8]) -> Repair {
        guard isASCIICompatible(bytes) else { return Repair(bytes: bytes, notes: []) }
        let declared = declaredEncoding(bytes)
        let isUTF8 =
            bytes.starts(with: [0xEF, 0xBB, 0xBF]) || declared == nil || declared == "utf-8" || declared == "utf8"
        // ISO-2022 and UTF-7 use ASCII bytes (ESC, `+`) as shifts.
        let isStateful = declared.map { $0.contains("2022") || $0.hasPrefix("utf-7") } ?? false
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 32)
        var counts = RepairCounts()
        var verbatimEnd = 0
        var index = 0
        while index < bytes.count {
            // Copy runs of bytes that need no look in one go.
            let runStart = index
            while index < bytes.count, isPlain(bytes[index]) { index += 1 }
            if index > runStart { output.append(contentsOf: bytes[runStart..<index]) }
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if index >= verbatimEnd, byte == UInt8(ascii: "<"), let end = verbatimSectionEnd(bytes, at: index) {
                verbatimEnd = end
            }
            let verbatim = index < verbatimEnd
            if byte < 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D, !isStateful {
                counts.controls += 1
                if isUTF8 {
                    output += markerUTF8
                } else if !verbatim {
                    output += markerReference
                }
                // Else dropped: a legacy encoding cannot spell the marker,
                // and CDATA and comments read no references (no URL
                // attribute lives there).
                index += 1
            } else if byte == UInt8(ascii: "&"), !verbatim {
                index = repairAmpersand(bytes, at: index, into: &output, counts: &counts)
            } else if byte >= 0x80, isUTF8 {
                index = repairNonASCII(bytes, at: index, into: &output, counts: &counts)
            } else {
                output.append(byte)
                index += 1
            }
        }
        return Repair(bytes: output, notes: counts.notes)
    }

    // MARK: - Private methods

    /// Copies or repairs the `&` at `index`; returns the index after it.
    private static func repairAmpersand(
        _ bytes: [UInt8], at index: Int, into output: inout [UInt8], counts: inout RepairCounts
    ) -> Int {
        let byte = bytes[index]
        var index = index + 1
        let after = bytes[index...]
        if predefinedEntities.contains(where: { after.starts(with: $0) }) {
            output.append(byte)
        } else if let (value, length) = characterReference(after) {
            if isXMLCharacter(value) {
                output.append(byte)
            } else {
                counts.controls += 1
                output += markerReference
                index += length
            }
        } else if let (scalar, length) = htmlEntity(after) {
            counts.entities += 1
            output += Array("&#\(scalar);".utf8)
            index += length
        } else {
            counts.ampersands += 1
            output += Array("&amp;".utf8)
        }
        return index
    }

    /// Copies or repairs the UTF-8 at `index`; returns the index after it.
    private static func repairNonASCII(
        _ bytes: [UInt8], at index: Int, into output: inout [UInt8], counts: inout RepairCounts
    ) -> Int {
        let length = utf8SequenceLength(bytes, at: index)
        if length == 3, bytes[index] == 0xEF, bytes[index + 1] == 0xBF, bytes[index + 2] >= 0xBE {
            // U+FFFE and U+FFFF are UTF-8 but not XML characters.
            counts.controls += 1
            output += markerUTF8
            return index + 3
        } else if length > 0 {
            output += bytes[index..<(index + length)]
            return index + length
        } else {
            counts.undecodable += 1
            appendUTF8(windows1252Scalar(bytes[index]), to: &output)
            return index + 1
        }
    }

    /// The index just past a CDATA section or comment starting at `index`.
    private static func verbatimSectionEnd(_ bytes: [UInt8], at index: Int) -> Int? {
        for (start, end) in [("<![CDATA[", "]]>"), ("<!--", "-->")] where bytes[index...].starts(with: start.utf8) {
            var stop = index + start.utf8.count
            while stop < bytes.count, !bytes[stop...].starts(with: end.utf8) { stop += 1 }
            return min(bytes.count, stop + end.utf8.count)
        }
        return nil
    }

    /// `#123;` or `#x1F;` at the start of `bytes`: the code point and the
    /// length of the reference after the `&`.
    private static func characterReference(_ bytes: ArraySlice<UInt8>) -> (UInt32, Int)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "#") else { return nil }
        index += 1
        let hex = index < bytes.endIndex && (bytes[index] == UInt8(ascii: "x") || bytes[index] == UInt8(ascii: "X"))
        if hex { index += 1 }
        let digitsStart = index
        var value: UInt32 = 0
        while index < bytes.endIndex, index - digitsStart < 8 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46 where hex: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66 where hex: digit = UInt32(b - 0x61 + 10)
            default: digit = UInt32.max
            }
            guard digit != UInt32.max else { break }
            value = value * (hex ? 16 : 10) + digit
            index += 1
        }
        guard index > digitsStart, index < bytes.endIndex, bytes[index] == UInt8(ascii: ";") else { return nil }
        return (value, index + 1 - bytes.startIndex)
    }

    /// `name;` at the start of `bytes` when `name` is an HTML 4 entity
    /// (libxml2's table): the code point and the length after the `&`.
    private static func htmlEntity(_ bytes: ArraySlice<UInt8>) -> (UInt32, Int)? {
        var name: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex, name.count <= 8, isASCIILetterOrDigit(bytes[index]) {
            name.append(bytes[index])
            index += 1
        }
        guard !name.isEmpty, index < bytes.endIndex, bytes[index] == UInt8(ascii: ";") else { return nil }
        name.append(0)
        guard let entity = htmlEntityLookup(name) else { return nil }
        return (entity.pointee.value, index + 1 - bytes.startIndex)
    }

    /// XML 1.0's `Char` production.
    private static func isXMLCharacter(_ value: UInt32) -> Bool {
        switch value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// The length of the well-formed UTF-8 sequence at `index`, 0 if none.
    private static func utf8SequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: return 0
        }
        guard index + length <= bytes.count, secondRange.contains(bytes[index + 1]) else { return 0 }
        for offset in 2..<length where !(0x80...0xBF).contains(bytes[index + offset]) {
            return 0
        }
        return length
    }

    private static func windows1252Scalar(_ byte: UInt8) -> UInt32 {
        if byte >= 0x80, byte <= 0x9F, windows1252High[Int(byte - 0x80)] != 0 {
            return windows1252High[Int(byte - 0x80)]
        }
        return UInt32(byte)
    }

    private static func appendUTF8(_ value: UInt32, to output: inout [UInt8]) {
        guard let scalar = Unicode.Scalar(value) else { return }
        output += Array(String(Character(scalar)).utf8)
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start...].starts(with: needle) {
            return start
        }
        return nil
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    /// A byte `repaired` copies as it is in any encoding: printable ASCII
    /// other than `&` and `<`, and the white space XML allows.
    private static func isPlain(_ b: UInt8) -> Bool {
        (b >= 0x20 && b < 0x80 && b != UInt8(ascii: "&") && b != UInt8(ascii: "<")) || b == 0x0A || b == 0x09
            || b == 0x0D
    }

    private static func isNameStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_")
    }

    private static func isASCIILetterOrDigit(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
    }
}
