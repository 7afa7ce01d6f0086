/// Finds the tags of an XML document as byte ranges, without building a
/// tree, so that an edit can change one element and keep every other byte.
///
/// Comments, CDATA sections, processing instructions and declarations are
/// skipped whole, so markup inside them is never taken for a tag, and a `>`
/// inside a quoted attribute value does not end a tag. The scan moves
/// forward only and looks at each byte a bounded number of times; a
/// construct left open ends it. It reads documents in ASCII-compatible
/// encodings (not UTF-16) and makes no claim about well-formedness: callers
/// check an edit by parsing its result.
struct XMLTagScanner {
    // MARK: - Nested types

    /// One start, end or empty-element tag.
    struct Tag {
        enum Kind {
            case start
            case end
            case empty
        }

        var kind: Kind

        /// The tag's bytes, from `<` to `>` inclusive.
        var range: Range<Int>

        /// The name after any prefix, ASCII lowercased.
        var localName: String

        /// Each attribute's local name, ASCII lowercased, and the range of
        /// its value between the quotes, in document order.
        var attributes: [(name: String, value: Range<Int>)]

        /// The decoded value of the first attribute whose local name is
        /// `name` (lowercase), as libxml2 reports it.
        func attribute(_ name: String, in bytes: [UInt8]) -> String? {
            guard let attribute = attributes.first(where: { $0.name == name }) else { return nil }
            return XMLTagScanner.decodedValue(bytes[attribute.value])
        }
    }

    // MARK: - Private constants

    private static let lessThan = UInt8(ascii: "<")
    private static let greaterThan = UInt8(ascii: ">")
    private static let slash = UInt8(ascii: "/")
    private static let equals = UInt8(ascii: "=")

    // MARK: - Internal methods

    /// Every tag in `bytes` outside comments, CDATA sections, processing
    /// instructions and declarations, in document order.
    static func tags(in bytes: [UInt8]) -> [Tag] {
        var tags: [Tag] = []
        var index = 0
        while index < bytes.count {
            guard bytes[index] == lessThan else {
                index += 1
                continue
            }
            let next: Int?
            if bytes[index...].starts(with: "<!--".utf8) {
                next = end(of: "-->", in: bytes, from: index + 4)
            } else if bytes[index...].starts(with: "<![CDATA[".utf8) {
                next = end(of: "]]>", in: bytes, from: index + 9)
            } else if bytes[index...].starts(with: "<?".utf8) {
                next = end(of: "?>", in: bytes, from: index + 2)
            } else if bytes[index...].starts(with: "<!".utf8) {
                next = declarationEnd(in: bytes, from: index + 2)
            } else if index + 1 < bytes.count, bytes[index + 1] != slash, isNameByte(bytes[index + 1]) {
                next = appendTag(in: bytes, at: index, to: &tags)
            } else if bytes[index...].starts(with: "</".utf8) {
                next = appendTag(in: bytes, at: index, to: &tags)
            } else {
                next = index + 1
            }
            guard let next else { break }
            index = next
        }
        return tags
    }

    /// An attribute value with its references decoded and its white space
    /// normalised as XML does (each tab or line end, CR LF counted once,
    /// becomes a space).
    static func decodedValue(_ raw: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "&"), let (scalar, length) = reference(raw[index...]) {
                output.append(contentsOf: String(scalar).utf8)
                index += length
                continue
            }
            if byte == 0x0D, index + 1 < raw.endIndex, raw[index + 1] == 0x0A { index += 1 }
            output.append(byte == 0x09 || byte == 0x0A || byte == 0x0D ? 0x20 : byte)
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: - Private methods

    /// Reads the start, end or empty tag at `open` into `tags`; the index
    /// after it, or `nil` when it is never closed.
    private static func appendTag(in bytes: [UInt8], at open: Int, to tags: inout [Tag]) -> Int? {
        let isEnd = bytes[open + 1] == slash
        var index = open + (isEnd ? 2 : 1)
        let nameStart = index
        while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
        let name = localName(bytes[nameStart..<index])
        var attributes: [(name: String, value: Range<Int>)] = []
        while index < bytes.count {
            let byte = bytes[index]
            let isEmpty = byte == slash && index + 1 < bytes.count && bytes[index + 1] == greaterThan
            if byte == greaterThan || isEmpty {
                let kind: Tag.Kind = isEnd ? .end : isEmpty ? .empty : .start
                let end = index + (isEmpty ? 2 : 1)
                tags.append(Tag(kind: kind, range: open..<end, localName: name, attributes: attributes))
                return end
            }
            guard isNameByte(byte) else {
                index += 1
                continue
            }
            guard let (attribute, next) = readAttribute(in: bytes, at: index) else { return nil }
            if let attribute { attributes.append(attribute) }
            index = next
        }
        return nil
    }

    /// The attribute whose name starts at `start` (`nil` when it has no
    /// value) and the index after it; `nil` when a quote is never closed.
    private static func readAttribute(
        in bytes: [UInt8], at start: Int
    ) -> ((name: String, value: Range<Int>)?, Int)? {
        var index = start
        while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
        let name = localName(bytes[start..<index])
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == equals else { return (nil, index) }
        index += 1
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        guard index < bytes.count else { return nil }
        let quote = bytes[index]
        guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
            // Not XML; read up to white space or the tag's end, as a
            // recovering parser would.
            let valueStart = index
            while index < bytes.count, !isSpace(bytes[index]), bytes[index] != greaterThan { index += 1 }
            return ((name, valueStart..<index), index)
        }
        guard let close = bytes[(index + 1)...].firstIndex(of: quote) else { return nil }
        return ((name, (index + 1)..<close), close + 1)
    }

    /// The index after the first `needle` at or after `start`.
    private static func end(of needle: String, in bytes: [UInt8], from start: Int) -> Int? {
        let needle = Array(needle.utf8)
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) {
                return index + needle.count
            }
            index += 1
        }
        return nil
    }

    /// The index after a `<!DOCTYPE ...>` or other declaration, whose
    /// internal subset in brackets and quoted strings may hold `>`.
    private static func declarationEnd(in bytes: [UInt8], from start: Int) -> Int? {
        var depth = 0
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                guard let close = bytes[(index + 1)...].firstIndex(of: bytes[index]) else { return nil }
                index = close
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "]"): depth = max(0, depth - 1)
            case greaterThan where depth == 0: return index + 1
            default: break
            }
            index += 1
        }
        return nil
    }

    /// Reads a scalar reference (`&amp;`, `&#38;`, `&#x26;`) at the start of
    /// `bytes`: the scalar and the reference's length.
    private static func reference(_ bytes: ArraySlice<UInt8>) -> (Unicode.Scalar, Int)? {
        guard let semicolon = bytes.prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
        let body = String(decoding: bytes[(bytes.startIndex + 1)..<semicolon], as: UTF8.self)
        let length = semicolon - bytes.startIndex + 1
        switch body {
        case "amp": return ("&", length)
        case "lt": return ("<", length)
        case "gt": return (">", length)
        case "quot": return ("\"", length)
        case "apos": return ("'", length)
        default: break
        }
        guard body.hasPrefix("#") else { return nil }
        let digits = body.dropFirst()
        let value =
            digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
        guard let value, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }

    /// The part of a qualified name after its prefix, ASCII lowercased.
    private static func localName(_ name: ArraySlice<UInt8>) -> String {
        let local = name.lastIndex(of: UInt8(ascii: ":")).map { name[($0 + 1)...] } ?? name
        return String(decoding: local.map { $0.asciiLowercased }, as: UTF8.self)
    }

    /// Bytes that may appear in a name: anything but white space and the
    /// characters that end a name in a tag.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        !isSpace(byte) && byte != greaterThan && byte != slash && byte != equals && byte != lessThan
            && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "'")
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
