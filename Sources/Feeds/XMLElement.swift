internal import CXML2

/// A read-only view of one element of an `XMLDocument`'s tree.
///
/// Valid only while its document is alive; the feed parser keeps the document
/// in scope for the whole walk.
struct XMLElement {
    // MARK: - Nested types

    /// The vocabularies the feed parser tells apart, by namespace URI or, for
    /// an undeclared prefix such as `itunes:`, by the prefix itself.
    enum Vocabulary: Equatable {
        /// No namespace, or the RSS 0.90/1.0 and Userland RSS 2.0 namespaces.
        case plain
        case atom
        case itunes
        case media
        case dublinCore
        case rdf
        case other
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
        let name = node.pointee.name.map { String(cString: $0) } ?? ""
        if node.pointee.ns == nil, let colon = name.firstIndex(of: ":") {
            return String(name[name.index(after: colon)...])
        }
        return name
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
            guard let href = ns.pointee.href else { return .plain }
            return Self.vocabulary(namespace: String(cString: href))
        }
        let name = node.pointee.name.map { String(cString: $0) } ?? ""
        guard let colon = name.firstIndex(of: ":") else { return .plain }
        switch name[..<colon].lowercased() {
        case "itunes": return .itunes
        case "media": return .media
        case "atom": return .atom
        case "dc": return .dublinCore
        case "rdf": return .rdf
        default: return .other
        }
    }

    /// Child elements in document order.
    var children: [XMLElement] {
        var result: [XMLElement] = []
        var child = node.pointee.children
        while let current = child {
            if current.pointee.type == XML_ELEMENT_NODE {
                result.append(XMLElement(current))
            }
            child = current.pointee.next
        }
        return result
    }

    /// All text and CDATA below this element, concatenated.
    var text: String {
        var bytes: [UInt8] = []
        Self.collectText(node, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The text with surrounding white space removed; `nil` when that leaves
    /// nothing.
    var trimmedText: String? {
        let value = text.trimmingWhitespace()
        return value.isEmpty ? nil : value
    }

    /// Child elements called `name` in `vocabulary`.
    func children(_ name: String, in vocabulary: Vocabulary = .plain) -> [XMLElement] {
        children.filter { $0.localName == name && $0.vocabulary == vocabulary }
    }

    /// The first child element called `name` in `vocabulary`.
    func child(_ name: String, in vocabulary: Vocabulary = .plain) -> XMLElement? {
        children.first { $0.localName == name && $0.vocabulary == vocabulary }
    }

    /// The value of the attribute whose local name is `name`, compared
    /// without regard to case when `ignoringCase` is set.
    func attribute(_ name: String, ignoringCase: Bool = false) -> String? {
        let wanted = ignoringCase ? name.lowercased() : name
        var attribute = node.pointee.properties
        while let current = attribute {
            defer { attribute = current.pointee.next }
            guard let rawName = current.pointee.name else { continue }
            var attributeName = String(cString: rawName)
            if let colon = attributeName.firstIndex(of: ":") {
                attributeName = String(attributeName[attributeName.index(after: colon)...])
            }
            if (ignoringCase ? attributeName.lowercased() : attributeName) == wanted {
                var bytes: [UInt8] = []
                var child = current.pointee.children
                while let text = child {
                    Self.collectText(text, into: &bytes)
                    child = text.pointee.next
                }
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }

    // MARK: - Private methods

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
        default: return .other
        }
    }

    private static func collectText(_ node: xmlNodePtr, into bytes: inout [UInt8]) {
        switch node.pointee.type {
        case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
            if let content = node.pointee.content {
                var pointer = content
                while pointer.pointee != 0 {
                    bytes.append(pointer.pointee)
                    pointer += 1
                }
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
}

// MARK: - String helpers

extension String {
    /// The string without leading and trailing white space (including
    /// newlines and no-break spaces).
    func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
            let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[first...last])
    }
}
