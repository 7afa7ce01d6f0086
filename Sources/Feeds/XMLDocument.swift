internal import CXML2

/// A parsed XML document that owns its libxml2 tree and frees it in `deinit`.
///
/// Parsing never touches the network (`XML_PARSE_NONET`), never loads a DTD
/// (no `XML_PARSE_DTDLOAD`), never substitutes entities (no
/// `XML_PARSE_NOENT`) and never processes XInclude; a document that declares
/// any entity is rejected before a reference to it can be expanded, so no
/// "billion laughs" document can make the parser allocate more than its own
/// size suggests.
///
/// A malformed document gets a second, recovering attempt on repaired bytes
/// (`XMLInput.repaired`). During that attempt every element is marked
/// complete when its end tag is read, damaged when libxml2 reports an error
/// inside it, and broken when it reports one in its start tag, so readers
/// can tell a cut-off or damaged element from a whole one
/// (`XMLElement.isIntact`).
final class XMLDocument {
    // MARK: - Nested types

    private struct ReadResult {
        var document: xmlDocPtr?
        var declaredEntity = false
        var fatalErrors = 0
        var message: String?
    }

    // MARK: - Properties

    /// The document's root element.
    let root: XMLElement

    /// Whether the document is not well-formed and was read in recover mode.
    let isRecovered: Bool

    /// libxml2's first complaint about a document that is not well-formed,
    /// with its line; `nil` when the document is well-formed.
    let problem: String?

    /// What was repaired to read it, one sentence each; empty when the
    /// document is well-formed.
    let warnings: [String]

    // MARK: - Private properties

    /// Runs `xmlInitParser()` exactly once per process, before any parse.
    private static let libraryReady: Void = xmlInitParser()

    /// No `XML_PARSE_NOENT`, `XML_PARSE_DTDLOAD`, `XML_PARSE_DTDATTR`,
    /// `XML_PARSE_XINCLUDE` or `XML_PARSE_HUGE`: each would let a document
    /// reach outside itself or grow without bound.
    private static let baseOptions =
        Int32(XML_PARSE_NONET.rawValue) | Int32(XML_PARSE_NOCDATA.rawValue)
        | Int32(XML_PARSE_NOERROR.rawValue) | Int32(XML_PARSE_NOWARNING.rawValue)
        | Int32(XML_PARSE_COMPACT.rawValue)

    private static let entityError = FeedError(
        "the document declares XML entities, which podfs refuses to expand")

    private let document: xmlDocPtr

    // MARK: - Init and deinit

    /// Parses `bytes`, whose encoding libxml2 detects from the BOM, the XML
    /// declaration or the first bytes (see `XMLInput.encodingOverride` for
    /// the one exception); `baseURL` becomes the document URL.
    ///
    /// With `textOf`, only text inside elements with one of those local
    /// names (or up to two levels below one) is kept; other elements read as
    /// empty. Show notes and indentation are most of a feed, and never
    /// building their nodes saves much of the time and memory a large feed
    /// takes.
    init(parsing bytes: [UInt8], baseURL: String, textOf: Set<String>? = nil) throws(FeedError) {
        _ = Self.libraryReady
        let input = XMLInput.strippingLeadingWhitespace(bytes)
        if input.isEmpty {
            throw FeedError("the document is empty")
        }
        if input.count > Int(Int32.max) {
            throw FeedError("the document is larger than 2 GB")
        }
        if XMLInput.prologDeclaresEntity(input) {
            throw Self.entityError
        }
        let encoding = XMLInput.encodingOverride(input)
        let strict = Self.read(input, baseURL: baseURL, encoding: encoding, recover: false, textOf: textOf)
        if strict.declaredEntity {
            throw Self.entityError
        }
        var warnings: [String] = []
        var parsed = strict.document
        if parsed == nil {
            let repair = XMLInput.repaired(input)
            let recovered = Self.read(
                repair.bytes, baseURL: baseURL, encoding: encoding, recover: true, textOf: textOf)
            if recovered.declaredEntity {
                throw Self.entityError
            }
            parsed = recovered.document
            warnings.append("not well-formed XML: \(strict.message ?? "unknown error"); read in recover mode")
            warnings += repair.notes
            if recovered.fatalErrors > 0 {
                warnings.append("libxml2 reported \(recovered.fatalErrors) errors after repairs")
            }
        }
        guard let document = parsed else {
            throw FeedError("not well-formed XML: \(strict.message ?? "unknown error")")
        }
        guard let rootNode = xmlDocGetRootElement(document) else {
            xmlFreeDoc(document)
            throw FeedError("not well-formed XML: \(strict.message ?? "the document has no root element")")
        }
        if strict.document == nil {
            // Tells every `XMLElement` of this tree to honour the marks.
            document.pointee._private = UnsafeMutableRawPointer(bitPattern: 1)
        }
        self.document = document
        self.root = XMLElement(rootNode)
        self.isRecovered = strict.document == nil
        self.problem = strict.document == nil ? strict.message ?? "unknown error" : nil
        self.warnings = warnings
    }

    deinit {
        xmlFreeDoc(document)
    }

    // MARK: - Private methods

    /// One parse with a fresh context. Returns a document only when it is
    /// well-formed (or `recover` is set) and no entity was declared.
    private static func read(
        _ input: [UInt8], baseURL: String, encoding: String?, recover: Bool, textOf: Set<String>?
    ) -> ReadResult {
        // Errors that libxml2 reports outside the context (encoding
        // conversion) go to this thread's handler; keep them off stderr.
        xmlSetStructuredErrorFunc(nil, silence)
        guard let context = xmlNewParserCtxt() else {
            return ReadResult(message: "out of memory")
        }
        defer { xmlFreeParserCtxt(context) }
        let state = ParseState(recovering: recover, textOf: textOf)
        context.pointee._private = Unmanaged.passUnretained(state).toOpaque()
        if let sax = context.pointee.sax {
            sax.pointee.serror = recordError
            sax.pointee.entityDecl = stopOnEntityDeclaration
            sax.pointee.unparsedEntityDecl = stopOnUnparsedEntityDeclaration
            if textOf != nil {
                sax.pointee.characters = keepWantedText
                sax.pointee.ignorableWhitespace = keepWantedText
            }
            if recover {
                sax.pointee.startElementNs = markBrokenStartTag
                sax.pointee.endElementNs = markCompleteAndEnd
            }
        }
        var options = baseOptions | (recover ? Int32(XML_PARSE_RECOVER.rawValue) : 0)
        if encoding != nil {
            options |= Int32(XML_PARSE_IGNORE_ENC.rawValue)
        }
        let document = withExtendedLifetime(state) {
            input.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xmlCtxtReadMemory(context, $0, Int32(buffer.count), baseURL, encoding, options)
                }
            }
        }
        context.pointee._private = nil
        var result = ReadResult(declaredEntity: state.declaredEntity, fatalErrors: state.fatalErrors)
        if let first = state.firstFatalError {
            result.message = trimmedMessage(first.message, line: first.line)
        } else if let message = context.pointee.lastError.message {
            result.message = trimmedMessage(String(cString: message), line: context.pointee.lastError.line)
        }
        if let document, result.declaredEntity || (!recover && context.pointee.wellFormed == 0) {
            xmlFreeDoc(document)
            return result
        }
        result.document = document
        return result
    }

    /// libxml2's message on one line, with the line it is about.
    private static func trimmedMessage(_ message: String, line: Int32) -> String {
        let text = message.split(whereSeparator: \.isNewline).map { String($0).trimmingWhitespace() }
            .filter { !$0.isEmpty }.joined(separator: "; ")
        return line > 0 ? "\(text) (line \(line))" : text
    }
}

// MARK: - Parse state

/// What the C callbacks learn during one parse; reached through the parser
/// context's `_private` field, on the parsing thread only.
private final class ParseState {
    // MARK: - Properties

    let recovering: Bool

    /// Local names of the elements whose text is kept; `nil` keeps all.
    let textOf: Set<String>?

    var declaredEntity = false

    var fatalErrors = 0

    /// libxml2's first fatal error, which names the cause; later ones are
    /// often consequences.
    var firstFatalError: (message: String, line: Int32)?

    /// `fatalErrors` at the last start or end tag: more errors by the next
    /// start tag were (most likely) in that start tag's attributes.
    var fatalErrorsAtLastTag = 0

    /// Slots of the table below: 2^`keptNameSlotBits`.
    private static let keptNameSlotBits = 8

    /// Whether an element called `name` is one whose text is kept, by the
    /// address of the name in the parser's dictionary (names are interned,
    /// so a feed has a few dozen): a direct-mapped table, a slot by a hash
    /// of the address, that forgets a name only when another takes its slot.
    /// Raw memory, freed in `deinit`: a class's array property would be
    /// checked for exclusive access at each of the many lookups.
    private let keptNames: UnsafeMutableBufferPointer<(name: UnsafeRawPointer?, keepsText: Bool)>

    // MARK: - Init and deinit

    init(recovering: Bool, textOf: Set<String>?) {
        self.recovering = recovering
        self.textOf = textOf
        keptNames = .allocate(capacity: 1 << Self.keptNameSlotBits)
        keptNames.initialize(repeating: (nil, false))
    }

    deinit {
        keptNames.deallocate()
    }

    // MARK: - Methods

    /// Whether text directly inside `node` is kept: when it or one of its
    /// two nearest ancestors is wanted, so markup inside a title
    /// (`<title>A <b>B</b></title>`) keeps its text.
    func keepsText(of node: xmlNodePtr) -> Bool {
        guard textOf != nil else { return true }
        var current: xmlNodePtr? = node
        for _ in 0..<3 {
            guard let element = current, element.pointee.type == XML_ELEMENT_NODE else { return false }
            if isWanted(element) { return true }
            current = element.pointee.parent
        }
        return false
    }

    private func isWanted(_ node: xmlNodePtr) -> Bool {
        guard let textOf, let name = node.pointee.name else { return false }
        let address = UnsafeRawPointer(name)
        // Names lie next to each other in the dictionary's pools: spread
        // the addresses by a multiplicative hash.
        let hash = UInt(bitPattern: address) &* 0x9E37_79B9_7F4A_7C15
        let slot = Int(bitPattern: hash >> (UInt.bitWidth - Self.keptNameSlotBits))
        if keptNames[slot].name == address { return keptNames[slot].keepsText }
        var local = String(cString: name)
        if let colon = local.lastIndex(of: ":") {
            local = String(local[local.index(after: colon)...])
        }
        let keeps = textOf.contains(local)
        keptNames[slot] = (address, keeps)
        return keeps
    }

    /// The state of the parse that `context` (a callback's `ctx` or
    /// `userData`, which libxml2 sets to the parser context) runs.
    static func from(context: UnsafeMutableRawPointer?) -> (xmlParserCtxtPtr, ParseState)? {
        guard let context else { return nil }
        let parser = context.assumingMemoryBound(to: xmlParserCtxt.self)
        guard let state = parser.pointee._private else { return nil }
        return (parser, Unmanaged<ParseState>.fromOpaque(state).takeUnretainedValue())
    }
}

@available(*, unavailable)
extension ParseState: Sendable {}

// MARK: - C callbacks

/// Swallows libxml2's error reports outside a parser context.
private let silence: xmlStructuredErrorFunc = { _, _ in }

/// Counts fatal errors; while recovering, marks the innermost open element
/// damaged. An error in a start tag is reported while the parent is still
/// the innermost element, so a broken attribute marks the parent damaged
/// and (through `markBrokenStartTag`) the element itself.
private let recordError: xmlStructuredErrorFunc = { userData, error in
    guard let error, error.pointee.level == XML_ERR_FATAL,
        let (parser, state) = ParseState.from(context: userData)
    else { return }
    state.fatalErrors += 1
    if state.firstFatalError == nil {
        state.firstFatalError = (error.pointee.message.map { String(cString: $0) } ?? "unknown error", error.pointee.line)
    }
    // Not `xmlStopParser` here, tempting as it is for a failed strict
    // parse: libxml2 keeps pointers into the input across an error report,
    // and stopping frees that input. (From a SAX callback it is safe.)
    if state.recovering, let node = parser.pointee.node {
        mark(node, XMLElement.Mark.damaged)
    }
}

/// Lets libxml2's default handler create the element, then marks it when
/// errors were reported since the last tag: libxml2 reports a broken
/// attribute (cut off, or ended early by a NUL) before it calls this, and
/// creates the element with what it could read.
private let markBrokenStartTag: startElementNsSAX2Func = {
    context, localName, prefix, uri, namespaceCount, namespaces, attributeCount, defaultedCount, attributes in
    xmlSAX2StartElementNs(
        context, localName, prefix, uri, namespaceCount, namespaces, attributeCount, defaultedCount, attributes)
    guard let (parser, state) = ParseState.from(context: context) else { return }
    if state.fatalErrors != state.fatalErrorsAtLastTag, let node = parser.pointee.node {
        mark(node, XMLElement.Mark.brokenStartTag)
    }
    state.fatalErrorsAtLastTag = state.fatalErrors
}

/// Marks the element being closed complete, then lets libxml2's default
/// handler pop it. libxml2 calls this for `/>` and for end tags, also for a
/// mismatched one (after reporting the error that marks it damaged), never
/// for an element still open when the input ends.
private let markCompleteAndEnd: endElementNsSAX2Func = { context, localName, prefix, uri in
    if let (parser, state) = ParseState.from(context: context) {
        if let node = parser.pointee.node {
            mark(node, XMLElement.Mark.complete)
        }
        state.fatalErrorsAtLastTag = state.fatalErrors
    }
    xmlSAX2EndElementNs(context, localName, prefix, uri)
}

private func mark(_ node: xmlNodePtr, _ flag: Int) {
    let marks = Int(bitPattern: node.pointee._private) | flag
    node.pointee._private = UnsafeMutableRawPointer(bitPattern: marks)
}

/// Lets libxml2 build a text node only inside elements whose text is read.
private let keepWantedText: charactersSAXFunc = { context, characters, length in
    if let (parser, state) = ParseState.from(context: context), let node = parser.pointee.node,
        !state.keepsText(of: node)
    {
        return
    }
    xmlSAX2Characters(context, characters, length)
}

/// Stops the parse at the first entity declaration, before any reference.
private let stopOnEntityDeclaration: entityDeclSAXFunc = { context, _, _, _, _, _ in
    stop(context)
}

private let stopOnUnparsedEntityDeclaration: unparsedEntityDeclSAXFunc = { context, _, _, _, _ in
    stop(context)
}

private func stop(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let parser = context.assumingMemoryBound(to: xmlParserCtxt.self)
    xmlStopParser(parser)
    // Without the state the document could not be told from a good one:
    // make it fail as not well-formed.
    parser.pointee.wellFormed = 0
    ParseState.from(context: context)?.1.declaredEntity = true
}

@available(*, unavailable)
extension XMLDocument: Sendable {}
