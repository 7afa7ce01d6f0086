/// Reads the start tags of an HTML page as a browser's tokenizer splits it
/// (the WHATWG HTML standard, "Tokenization"), without building a tree.
///
/// Tolerant and bounded: any bytes are accepted, the scan only moves
/// forward, each byte is looked at a bounded number of times, and a tag or
/// quote left open at the end of the page is dropped, as a browser drops it.
/// Comments and the contents of `<script>`, `<style>`, `<title>` and the
/// other raw-text elements are skipped, so markup inside them is never
/// taken for a tag. Pages in ASCII-compatible encodings only (not UTF-16).
///
/// Generic over the page's bytes so that a test can count how many times
/// each byte is read (the bound above, checked without a clock).
struct HTMLTagScanner {
    // MARK: - Nested types

    /// One start tag.
    struct Tag {
        /// The tag name, ASCII lowercased.
        var name: String

        /// Each attribute's name, ASCII lowercased, and the range of its
        /// raw value, in document order.
        var attributes: [(name: String, value: Range<Int>)]

        /// The decoded value of the first attribute called `name`
        /// (lowercase), as a browser keeps only the first of duplicates.
        func attribute<Bytes: HTMLBytes>(_ name: String, in bytes: Bytes) -> String? {
            guard let attribute = attributes.first(where: { $0.name == name }) else { return nil }
            return HTMLTagScanner.decodedValue(bytes[attribute.value])
        }
    }

    // MARK: - Private constants

    /// Elements whose content is text up to their end tag.
    private static let rawTextElements: Set<String> = [
        "script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript",
    ]

    private static let greaterThan = UInt8(ascii: ">")
    private static let slash = UInt8(ascii: "/")

    // MARK: - Internal methods

    /// Calls `body` with each start tag of `bytes` (a whole page, indexed
    /// from 0), in document order.
    static func forEachStartTag<Bytes: HTMLBytes>(in bytes: Bytes, _ body: (Tag) -> Void) {
        assert(bytes.startIndex == 0, "a whole page, indexed from 0")
        var index = 0
        while let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")), open + 1 < bytes.count {
            let first = bytes[open + 1]
            let second = open + 2 < bytes.count ? bytes[open + 2] : 0
            let next: Int?
            if first == UInt8(ascii: "!"), second == UInt8(ascii: "-"), byte(bytes, open + 3) == UInt8(ascii: "-") {
                next = commentEnd(in: bytes, from: open + 4)
            } else if first == UInt8(ascii: "!") || first == UInt8(ascii: "?")
                || (first == slash && !isASCIILetter(second))
            {
                // A bogus comment, up to the next `>`.
                next = bytes[open...].firstIndex(of: greaterThan).map { $0 + 1 }
            } else if first == slash {
                next = readTag(in: bytes, nameAt: open + 2)?.next
            } else if isASCIILetter(first) {
                guard let (tag, end) = readTag(in: bytes, nameAt: open + 1) else { return }
                body(tag)
                next = tag.name == "plaintext" ? nil : rawTextEnd(of: tag.name, in: bytes, from: end)
            } else {
                next = open + 1
            }
            guard let next else { return }
            index = next
        }
    }

    /// A value with its character references decoded: the five XML ones
    /// and numeric ones, each ending in `;` (a URL's `&b=2` stays as it is).
    /// A reference to a character that cannot be is U+FFFD.
    static func decodedValue<Raw: HTMLBytes>(_ raw: Raw) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            guard raw[index] == UInt8(ascii: "&"),
                let semicolon = raw[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")),
                let scalar = referencedScalar(String(decoding: raw[(index + 1)..<semicolon], as: UTF8.self))
            else {
                output.append(raw[index])
                index += 1
                continue
            }
            output.append(contentsOf: String(scalar).utf8)
            index = semicolon + 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: - Private methods

    /// Reads a tag whose name starts at `nameAt`: the tag and the index
    /// after its `>`, or `nil` when the page ends inside it.
    private static func readTag<Bytes: HTMLBytes>(in bytes: Bytes, nameAt start: Int) -> (tag: Tag, next: Int)? {
        var index = start
        while index < bytes.count, !isSpace(bytes[index]), bytes[index] != slash, bytes[index] != greaterThan {
            index += 1
        }
        var tag = Tag(name: lowercased(bytes[start..<index]), attributes: [])
        while index < bytes.count {
            let byte = bytes[index]
            if byte == greaterThan { return (tag, index + 1) }
            if isSpace(byte) || byte == slash {
                index += 1
                continue
            }
            guard let (attribute, next) = readAttribute(in: bytes, at: index) else { return nil }
            tag.attributes.append(attribute)
            index = next
        }
        return nil
    }

    /// Reads the attribute whose name starts at `start`: it and the index
    /// after it, or `nil` when the page ends inside a quoted value.
    private static func readAttribute<Bytes: HTMLBytes>(
        in bytes: Bytes, at start: Int
    ) -> ((name: String, value: Range<Int>), Int)? {
        // The first character may be `=`, which then belongs to the name.
        var index = start + 1
        while index < bytes.count, !isSpace(bytes[index]), bytes[index] != slash, bytes[index] != greaterThan,
            bytes[index] != UInt8(ascii: "=")
        {
            index += 1
        }
        let name = lowercased(bytes[start..<index])
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return ((name, index..<index), index) }
        index += 1
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        guard index < bytes.count else { return nil }
        let quote = bytes[index]
        if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            guard let close = bytes[(index + 1)...].firstIndex(of: quote) else { return nil }
            return ((name, (index + 1)..<close), close + 1)
        }
        let valueStart = index
        while index < bytes.count, !isSpace(bytes[index]), bytes[index] != greaterThan { index += 1 }
        return ((name, valueStart..<index), index)
    }

    /// The index after a comment whose text starts at `start`: after `-->`
    /// or `--!>`, or at once for `<!-->` and `<!--->`.
    private static func commentEnd<Bytes: HTMLBytes>(in bytes: Bytes, from start: Int) -> Int? {
        let dash = UInt8(ascii: "-")
        if byte(bytes, start) == greaterThan { return start + 1 }
        if byte(bytes, start) == dash, byte(bytes, start + 1) == greaterThan { return start + 2 }
        var index = start
        while let found = bytes[index...].firstIndex(of: dash) {
            if byte(bytes, found + 1) == dash {
                if byte(bytes, found + 2) == greaterThan { return found + 3 }
                if byte(bytes, found + 2) == UInt8(ascii: "!"), byte(bytes, found + 3) == greaterThan {
                    return found + 4
                }
            }
            index = found + 1
        }
        return nil
    }

    /// Where tokenizing resumes after the start tag of `name` ending at
    /// `start`: after its end tag for a raw-text element, else `start`.
    private static func rawTextEnd<Bytes: HTMLBytes>(of name: String, in bytes: Bytes, from start: Int) -> Int? {
        guard rawTextElements.contains(name) else { return start }
        let nameBytes = Array(name.utf8)
        var index = start
        while let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) {
            let nameEnd = open + 2 + nameBytes.count
            if open + 1 < bytes.count, bytes[open + 1] == slash, nameEnd <= bytes.count,
                lowercased(bytes[(open + 2)..<nameEnd]) == name,
                nameEnd == bytes.count || isSpace(bytes[nameEnd]) || bytes[nameEnd] == slash
                    || bytes[nameEnd] == greaterThan
            {
                return open
            }
            index = open + 1
        }
        return nil
    }

    /// The scalar a reference's text between `&` and `;` names.
    private static func referencedScalar(_ body: String) -> Unicode.Scalar? {
        switch body {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        default: break
        }
        guard body.hasPrefix("#"), body.count > 1 else { return nil }
        let digits = body.dropFirst()
        let isHex = digits.first == "x" || digits.first == "X"
        guard !isHex || digits.count > 1 else { return nil }
        let value = isHex ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
        guard let value else { return nil }
        guard value != 0, let scalar = Unicode.Scalar(value) else { return "\u{FFFD}" }
        return scalar
    }

    /// The byte at `index`, or 0 past the end.
    private static func byte<Bytes: HTMLBytes>(_ bytes: Bytes, _ index: Int) -> UInt8 {
        index < bytes.count ? bytes[index] : 0
    }

    private static func lowercased<Part: Collection<UInt8>>(_ bytes: Part) -> String {
        String(decoding: bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A
    }

    /// HTML's ASCII white space: tab, line feed, form feed, return, space.
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }
}

/// Bytes the scanner can read: a page, or a part of one, indexed by its
/// offset in the page.
protocol HTMLBytes: RandomAccessCollection<UInt8> where Index == Int, SubSequence: HTMLBytes {}

extension Array: HTMLBytes where Element == UInt8 {}
extension ArraySlice: HTMLBytes where Element == UInt8 {}
