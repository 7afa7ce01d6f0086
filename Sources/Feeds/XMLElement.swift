internal import CXML2
internal import Glibc

/// A read-only view of one element of an `XMLDocument`'s tree.
///
/// Valid only while its document is alive; the feed parser keeps the document
/// in scope for the whole walk. In a document that libxml2 had to recover,
/// text of an element that was cut off reads as empty and attributes that
/// libxml2 reported an error in read as `nil`, so a truncated or damaged
/// value never passes for a whole one.
struct XMLElement {
    // MARK: - Nested types

    /// The vocabularies the feed parser tells apart, by namespace URI or, for
    /// an undeclared prefix such as `itunes:`, by the prefix itself.
    enum Vocabulary: Int {
        /// No namespace, or the RSS 0.90/1.0 and Userland RSS 2.0 namespaces.
        case plain = 1
        case atom
        case itunes
        case media
        case dublinCore
        case rdf
        /// Podcasting 2.0 (`podcast:`), under its current and older URI.
        case podcastIndex
        /// The RSS 1.0 enclosure module (`enc:enclosure`).
        case enclosureModule
        case other
    }

    /// The element children of one element, in document order.
    struct Children: Sequence, IteratorProtocol {
        private var upcoming: xmlNodePtr?

        fileprivate init(first: xmlNodePtr?) {
            upcoming = first
        }

        mutating func next() -> XMLElement? {
            while let current = upcoming {
                upcoming = current.pointee.next
                if current.pointee.type == XML_ELEMENT_NODE { return XMLElement(current) }
            }
            return nil
        }
    }

    /// Bits that `XMLDocument` keeps in an element's `_private` field while
    /// recovering a malformed document.
    enum Mark {
        /// The element's end tag (or `/>`) was read.
        static let complete = 1
        /// libxml2 reported an error while this was the innermost open
        /// element: in its text, or in a child's start tag.
        static let damaged = 2
        /// libxml2 reported an error in the element's own start tag, so its
        /// attributes may be cut short.
        static let brokenStartTag = 4
    }

    // MARK: - Properties

    private let node: xmlNodePtr

    // MARK: - Init

    init(_ node: xmlNodePtr) {
        self.node = node
    }

    // MARK: - Internal methods

    /// The element name without its prefix.
    var localName: String {
        guard let name = localNamePointer else { return "" }
        return String(cString: name)
    }

    /// The name as written, with its prefix, for messages.
    var qualifiedName: String {
        let name = node.pointee.name.map { String(cString: $0) } ?? ""
        if let prefix = node.pointee.ns?.pointee.prefix {
            return "\(String(cString: prefix)):\(name)"
        }
        return name
    }

    var vocabulary: Vocabulary {
        if let ns = node.pointee.ns {
            // Cached in the namespace's `_private`: one declaration serves
            // thousands of elements.
            if let cached = Vocabulary(rawValue: Int(bitPattern: ns.pointee._private)) { return cached }
            let vocabulary = ns.pointee.href.map { Self.vocabulary(namespace: String(cString: $0)) } ?? .plain
            ns.pointee._private = UnsafeMutableRawPointer(bitPattern: vocabulary.rawValue)
            return vocabulary
        }
        guard let name = node.pointee.name, let colon = Self.colonOffset(name) else { return .plain }
        let prefix = String(decoding: UnsafeBufferPointer(start: name, count: colon), as: UTF8.self)
        switch prefix.lowercased() {
        case "itunes": return .itunes
        case "media": return .media
        case "atom": return .atom
        case "dc": return .dublinCore
        case "rdf": return .rdf
        case "podcast": return .podcastIndex
        case "enc": return .enclosureModule
        default: return .other
        }
    }

    /// Child elements in document order, walked without an array.
    var children: Children {
        Children(first: node.pointee.children)
    }

    /// Whether the element was read to its end. Always true in a well-formed
    /// document.
    var isComplete: Bool {
        !isInRecoveredDocument || marks & Mark.complete != 0
    }

    /// Whether the element was read to its end with no error reported in
    /// its start tag or while it was the innermost open element. Always true
    /// in a well-formed document.
    var isIntact: Bool {
        !isInRecoveredDocument || marks == Mark.complete
    }

    /// All text and CDATA below this element that the document kept (see
    /// `XMLDocument.init(parsing:baseURL:textOf:)`), concatenated; empty
    /// when the element was cut off.
    var text: String {
        guard isComplete else { return "" }
        // Most elements read hold one text node: decode it in place.
        if let only = node.pointee.children, only.pointee.next == nil,
            only.pointee.type == XML_TEXT_NODE || only.pointee.type == XML_CDATA_SECTION_NODE
        {
            guard let content = only.pointee.content else { return "" }
            let buffer = UnsafeBufferPointer(start: content, count: strlen(content))
            if !isInRecoveredDocument || !buffer.contains(0xEF) {
                return String(decoding: buffer, as: UTF8.self)
            }
        }
        var bytes: [UInt8] = []
        Self.collectText(node, into: &bytes)
        if isInRecoveredDocument { Self.removeDamageMarkers(&bytes) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The text with surrounding white space removed; `nil` when that leaves
    /// nothing.
    var trimmedText: String? {
        let value = text.trimmingWhitespace()
        return value.isEmpty ? nil : value
    }

    /// Whether the element is called `name` in `vocabulary`.
    func isNamed(_ name: StaticString, in vocabulary: Vocabulary = .plain) -> Bool {
        hasLocalName(name) && self.vocabulary == vocabulary
    }

    /// Whether the local name is `name`, byte for byte, in any vocabulary:
    /// no `String` is made, so a walk can test each child against a few
    /// names cheaply.
    func hasLocalName(_ name: StaticString) -> Bool {
        guard let pointer = localNamePointer else { return false }
        let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for (offset, byte) in wanted.enumerated() where pointer[offset] != byte {
            return false
        }
        return pointer[wanted.count] == 0
    }

    /// Child elements called `name` in `vocabulary`.
    func children(_ name: StaticString, in vocabulary: Vocabulary = .plain) -> [XMLElement] {
        children.filter { $0.isNamed(name, in: vocabulary) }
    }

    /// The first child element called `name` in `vocabulary`.
    func child(_ name: StaticString, in vocabulary: Vocabulary = .plain) -> XMLElement? {
        children.first { $0.isNamed(name, in: vocabulary) }
    }

    /// The value of the attribute whose local name is `name`, compared
    /// without regard to case when `ignoringCase` is set. `nil` as well when
    /// the element is not intact. Unlike text, the value keeps
    /// `XMLInput.damageMarker`, so a URL with a NUL in it stays invalid.
    func attribute(_ name: StaticString, ignoringCase: Bool = false) -> String? {
        guard isIntact else { return nil }
        var attribute = node.pointee.properties
        while let current = attribute {
            defer { attribute = current.pointee.next }
            guard let rawName = current.pointee.name,
                Self.attributeName(rawName, matches: name, ignoringCase: ignoringCase)
            else { continue }
            // Most values are one text node: decode it in place.
            if let only = current.pointee.children, only.pointee.next == nil, only.pointee.type == XML_TEXT_NODE,
                let content = only.pointee.content
            {
                return String(cString: content)
            }
            var bytes: [UInt8] = []
            var child = current.pointee.children
            while let text = child {
                Self.collectText(text, into: &bytes)
                child = text.pointee.next
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    /// The base URI in effect for this element: the document URL combined
    /// with any `xml:base` attributes on the way down (Atom uses them).
    func baseURL() -> String? {
        guard let base = xmlNodeGetBase(node.pointee.doc, node) else { return nil }
        defer { free(base) }
        return String(cString: base)
    }

    // MARK: - Private methods

    private var isInRecoveredDocument: Bool {
        node.pointee.doc?.pointee._private != nil
    }

    private var marks: Int {
        Int(bitPattern: node.pointee._private)
    }

    /// The name after any undeclared prefix (`itunes:image` -> `image`).
    private var localNamePointer: UnsafePointer<xmlChar>? {
        guard let name = node.pointee.name else { return nil }
        if node.pointee.ns == nil, let colon = Self.colonOffset(name) {
            return name + colon + 1
        }
        return name
    }

    /// Whether an attribute called `rawName` (after any prefix) is `name`,
    /// compared as `String`s, lowercased when `ignoringCase` is set. ASCII
    /// names, all that feeds use, are compared as bytes: for them the
    /// prefix ends at the first colon byte and lowercasing maps A-Z only.
    private static func attributeName(
        _ rawName: UnsafePointer<xmlChar>, matches name: StaticString, ignoringCase: Bool
    ) -> Bool {
        let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        let length = strlen(rawName)
        let written = UnsafeBufferPointer(start: rawName, count: length)
        guard wanted.allSatisfy({ $0 < 0x80 }), written.allSatisfy({ $0 < 0x80 }) else {
            var attributeName = String(cString: rawName)
            if let colon = attributeName.firstIndex(of: ":") {
                attributeName = String(attributeName[attributeName.index(after: colon)...])
            }
            let wantedName = name.description
            return ignoringCase ? attributeName.lowercased() == wantedName.lowercased() : attributeName == wantedName
        }
        let start = written.firstIndex(of: UInt8(ascii: ":")).map { $0 + 1 } ?? 0
        guard length - start == wanted.count else { return false }
        for (offset, byte) in wanted.enumerated() {
            let other = rawName[start + offset]
            if ignoringCase ? other.asciiLowercased != byte.asciiLowercased : other != byte { return false }
        }
        return true
    }

    private static func colonOffset(_ name: UnsafePointer<xmlChar>) -> Int? {
        var offset = 0
        while name[offset] != 0 {
            if name[offset] == UInt8(ascii: ":") { return offset }
            offset += 1
        }
        return nil
    }

    private static func vocabulary(namespace: String) -> Vocabulary {
        var uri = namespace.lowercased()
        if uri.hasPrefix("https://") { uri = "http://" + uri.dropFirst("https://".count) }
        while uri.hasSuffix("/") || uri.hasSuffix("#") { uri.removeLast() }
        switch uri {
        case "http://purl.org/rss/1.0", "http://my.netscape.com/rdf/simple/0.9",
            "http://backend.userland.com/rss2", "http://backend.userland.com/rss":
            return .plain
        case "http://www.w3.org/2005/atom", "http://purl.org/atom/ns": return .atom
        case "http://www.itunes.com/dtds/podcast-1.0.dtd": return .itunes
        case "http://search.yahoo.com/mrss": return .media
        case "http://purl.org/dc/elements/1.1": return .dublinCore
        case "http://www.w3.org/1999/02/22-rdf-syntax-ns": return .rdf
        case "http://podcastindex.org/namespace/1.0",
            "http://github.com/podcastindex-org/podcast-namespace/blob/main/docs/1.0.md":
            return .podcastIndex
        case "http://purl.oclc.org/net/rss_2.0/enc": return .enclosureModule
        default: return .other
        }
    }

    private static func collectText(_ node: xmlNodePtr, into bytes: inout [UInt8]) {
        switch node.pointee.type {
        case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
            if let content = node.pointee.content {
                bytes.append(contentsOf: UnsafeBufferPointer(start: content, count: strlen(content)))
            }
        case XML_ENTITY_REF_NODE:
            // A reference to an entity nobody declared, kept because the
            // document has an external DTD that podfs does not load
            // (`&eacute;` in RSS 0.91 feeds): HTML's meaning, else as written.
            guard let name = node.pointee.name else { break }
            if let entity = htmlEntityLookup(name), let scalar = Unicode.Scalar(entity.pointee.value) {
                bytes.append(contentsOf: String(Character(scalar)).utf8)
            } else {
                bytes.append(UInt8(ascii: "&"))
                bytes.append(contentsOf: UnsafeBufferPointer(start: name, count: strlen(name)))
                bytes.append(UInt8(ascii: ";"))
            }
        case XML_ELEMENT_NODE:
            var child = node.pointee.children
            while let current = child {
                collectText(current, into: &bytes)
                child = current.pointee.next
            }
        default:
            break
        }
    }

    /// Drops `XMLInput.damageMarker` (EF B7 90 in UTF-8) from text.
    private static func removeDamageMarkers(_ bytes: inout [UInt8]) {
        guard bytes.contains(0xEF) else { return }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0xEF, index + 2 < bytes.count, bytes[index + 1] == 0xB7, bytes[index + 2] == 0x90 {
                index += 3
                continue
            }
            output.append(bytes[index])
            index += 1
        }
        bytes = output
    }
}

// MARK: - String helpers

extension String {
    /// The string without `XMLInput.damageMarker`, for attribute values
    /// that are not URLs (text drops the marker by itself).
    func removingDamageMarkers() -> String {
        guard unicodeScalars.contains(XMLInput.damageMarker) else { return self }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: unicodeScalars.lazy.filter { $0 != XMLInput.damageMarker })
        return String(result)
    }

    /// The string without leading and trailing white space (including
    /// newlines and no-break spaces).
    func trimmingWhitespace() -> String {
        // Most values have printable ASCII at both ends.
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x7F, last > 0x20, last < 0x7F {
            return self
        }
        guard let first = firstIndex(where: { !$0.isWhitespace }),
            let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}
