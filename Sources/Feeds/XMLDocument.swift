internal import CXML2

/// A parsed XML document that owns its libxml2 tree and frees it in `deinit`.
///
/// Parsing never touches the network (`XML_PARSE_NONET`), never loads a DTD
/// and never substitutes entities; a document that declares any entity is
/// rejected before a reference to it can be expanded, so no "billion laughs"
/// document can make the parser allocate more than its own size suggests.
/// Malformed documents get a second, recovering attempt.
final class XMLDocument {
    // MARK: - Properties

    /// The document's root element.
    let root: XMLElement

    private let document: xmlDocPtr

    // MARK: - Init and deinit

    /// Parses `bytes`, whose encoding libxml2 detects from the BOM, the XML
    /// declaration or the first bytes; `baseURL` becomes the document URL.
    init(parsing bytes: [UInt8], baseURL: String) throws(FeedError) {
        _ = Self.libraryReady
        let input = Self.strippingLeadingWhitespace(bytes)
        if input.isEmpty {
            throw FeedError("the document is empty")
        }
        if Self.prologDeclaresEntity(input) {
            throw FeedError("the document declares XML entities, which podfs refuses to expand")
        }
        let strict = Self.read(input, baseURL: baseURL, recover: false)
        var parsed = strict.document
        if parsed == nil, !strict.rejectedEntity {
            parsed = Self.read(Self.escapingStrayAmpersands(input), baseURL: baseURL, recover: true).document
        }
        if strict.rejectedEntity {
            throw FeedError("the document declares XML entities, which podfs refuses to expand")
        }
        guard let document = parsed else {
            throw FeedError("not well-formed XML: \(strict.message ?? "unknown error")")
        }
        guard let rootNode = xmlDocGetRootElement(document) else {
            xmlFreeDoc(document)
            throw FeedError("not well-formed XML: the document has no root element")
        }
        self.document = document
        self.root = XMLElement(rootNode)
    }

    deinit {
        xmlFreeDoc(document)
    }

    // MARK: - Private constants

    /// Runs `xmlInitParser()` exactly once per process, before any parse.
    private static let libraryReady: Void = xmlInitParser()

    private static let baseOptions =
        Int32(XML_PARSE_NONET.rawValue) | Int32(XML_PARSE_NOCDATA.rawValue)
        | Int32(XML_PARSE_NOERROR.rawValue) | Int32(XML_PARSE_NOWARNING.rawValue)

    // MARK: - Private methods

    private struct ReadResult {
        var document: xmlDocPtr?
        var rejectedEntity = false
        var message: String?
    }

    /// One parse with a fresh context. Returns a document only when it is
    /// well-formed (or `recover` is set) and no entity was declared.
    private static func read(_ input: [UInt8], baseURL: String, recover: Bool) -> ReadResult {
        // Errors that libxml2 reports outside the context (encoding
        // conversion) go to this thread's handler; keep them off stderr.
        xmlSetStructuredErrorFunc(nil, silence)
        guard let context = xmlNewParserCtxt() else {
            return ReadResult(message: "out of memory")
        }
        defer { xmlFreeParserCtxt(context) }
        if let sax = context.pointee.sax {
            sax.pointee.serror = silence
            sax.pointee.entityDecl = stopOnEntityDeclaration
            sax.pointee.unparsedEntityDecl = stopOnUnparsedEntityDeclaration
        }
        let options = baseOptions | (recover ? Int32(XML_PARSE_RECOVER.rawValue) : 0)
        let document = input.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlCtxtReadMemory(context, $0, Int32(clamping: buffer.count), baseURL, nil, options)
            }
        }
        var result = ReadResult()
        if context.pointee.errNo == Int32(XML_ERR_USER_STOP.rawValue) {
            result.rejectedEntity = true
        } else if let message = context.pointee.lastError.message {
            result.message = trimmedMessage(String(cString: message), line: context.pointee.lastError.line)
        }
        if let document, result.rejectedEntity || (!recover && context.pointee.wellFormed == 0) {
            xmlFreeDoc(document)
            return result
        }
        result.document = document
        return result
    }

    private static func trimmedMessage(_ message: String, line: Int32) -> String {
        var text = message
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return line > 0 ? "\(text) (line \(line))" : text
    }

    /// Drops white space before `<?xml` (published feeds have it; strict XML
    /// forbids it), keeping any byte order mark in front.
    static func strippingLeadingWhitespace(_ bytes: [UInt8]) -> [UInt8] {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
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
        return Array(bytes.drop(while: isSpace))
    }

    /// Before the recovering attempt: turns each `&` that does not start a
    /// character reference or one of XML's five predefined entities into
    /// `&amp;`, outside CDATA sections and comments. Feeds with bare `&` in
    /// URLs or HTML entities such as `&nbsp;` then keep their text, where
    /// libxml2's recovery would drop it. Only for ASCII-compatible encodings.
    static func escapingStrayAmpersands(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) || bytes.prefix(4).contains(0) {
            return bytes
        }
        let predefined: [[UInt8]] = ["amp;", "lt;", "gt;", "quot;", "apos;"].map { Array($0.utf8) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 64)
        var index = 0
        while index < bytes.count {
            if let end = verbatimSectionEnd(bytes, at: index) {
                output += bytes[index..<end]
                index = end
                continue
            }
            let byte = bytes[index]
            output.append(byte)
            index += 1
            if byte == UInt8(ascii: "&") {
                let after = bytes[index...]
                if !predefined.contains(where: { after.starts(with: $0) }), !startsCharacterReference(after) {
                    output += Array("amp;".utf8)
                }
            }
        }
        return output
    }

    /// The index just past a CDATA section or comment starting at `index`.
    private static func verbatimSectionEnd(_ bytes: [UInt8], at index: Int) -> Int? {
        guard bytes[index] == UInt8(ascii: "<") else { return nil }
        for (start, end) in [("<![CDATA[", "]]>"), ("<!--", "-->")] where bytes[index...].starts(with: start.utf8) {
            var stop = index + start.utf8.count
            while stop < bytes.count, !bytes[stop...].starts(with: end.utf8) { stop += 1 }
            return min(bytes.count, stop + end.utf8.count)
        }
        return nil
    }

    /// `#123;` or `#x1F;` at the start of `bytes`.
    private static func startsCharacterReference(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "#") else { return false }
        index += 1
        let hex = index < bytes.endIndex && (bytes[index] == UInt8(ascii: "x") || bytes[index] == UInt8(ascii: "X"))
        if hex { index += 1 }
        let digitsStart = index
        while index < bytes.endIndex {
            let b = bytes[index]
            let isDigit = b >= 0x30 && b <= 0x39
            let isHex = isDigit || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66)
            guard hex ? isHex : isDigit else { break }
            index += 1
        }
        return index > digitsStart && index < bytes.endIndex && bytes[index] == UInt8(ascii: ";")
    }

    /// Looks for `<!ENTITY` before the first element in ASCII-compatible
    /// encodings. The SAX hook catches declarations in any other encoding.
    private static func prologDeclaresEntity(_ bytes: [UInt8]) -> Bool {
        let marker = Array("<!ENTITY".utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count {
                let next = bytes[index + 1]
                let startsElement = (next >= 0x41 && next <= 0x5A) || (next >= 0x61 && next <= 0x7A)
                    || next == UInt8(ascii: "_")
                if startsElement { return false }
                if bytes[index...].starts(with: marker) { return true }
            }
            index += 1
        }
        return false
    }
}

// MARK: - C callbacks

/// Swallows libxml2's error reports; the parser keeps the last one itself.
private let silence: xmlStructuredErrorFunc = { _, _ in }

/// Stops the parse at the first entity declaration, before any reference.
private let stopOnEntityDeclaration: entityDeclSAXFunc = { context, _, _, _, _, _ in
    guard let context else { return }
    xmlStopParser(context.assumingMemoryBound(to: xmlParserCtxt.self))
}

private let stopOnUnparsedEntityDeclaration: unparsedEntityDeclSAXFunc = { context, _, _, _, _ in
    guard let context else { return }
    xmlStopParser(context.assumingMemoryBound(to: xmlParserCtxt.self))
}

@available(*, unavailable)
extension XMLDocument: Sendable {}
