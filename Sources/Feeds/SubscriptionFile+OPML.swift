/// Edits of an OPML SOURCE file, made in its text at places
/// `XMLTagScanner` finds, so that comments, declarations and formatting
/// outside the edited element stay as they were.
extension SubscriptionFile {
    // MARK: - Internal methods

    /// `bytes` with an outline for `url` just before `</body>`; `nil` when
    /// there is no `</body>` or the document is not ASCII-compatible.
    static func insertingOutline(url: String, title: String?, into bytes: [UInt8]) -> [UInt8]? {
        guard XMLInput.isASCIICompatible(bytes) else { return nil }
        let tags = XMLTagScanner.tags(in: bytes)
        guard let bodyEnd = tags.lastIndex(where: { $0.kind == .end && $0.localName == "body" }) else {
            return nil
        }
        let encoding = XMLInput.declaredEncoding(bytes)
        let element = outlineElement(
            url: url, title: title, asciiOnly: encoding != nil && encoding != "utf-8" && encoding != "utf8")
        let position = tags[bodyEnd].range.lowerBound
        let lineStart = startOfLine(in: bytes, at: position)
        var edited = bytes
        guard lineStart > 0, bytes[lineStart..<position].allSatisfy(isBlank) else {
            edited.insert(contentsOf: element.utf8, at: position)
            return edited
        }
        // `</body>` starts its line: the outline gets a line of its own.
        let bodyIndent = bytes[lineStart..<position]
        let fallback = bodyIndent + (bodyIndent.contains(0x09) ? [0x09] : [0x20, 0x20])
        let indent = lastChildIndent(in: bytes, tags: tags[..<bodyEnd]) ?? Array(fallback)
        let lineEnd: [UInt8] = lineStart >= 2 && bytes[lineStart - 2] == 0x0D ? [0x0D, 0x0A] : [0x0A]
        edited.insert(contentsOf: indent + Array(element.utf8) + lineEnd, at: lineStart)
        return edited
    }

    /// `bytes` without the outlines whose `xmlUrl` `SourceList` reads as
    /// `url`; `nil` when one of them has child outlines or the document is
    /// not ASCII-compatible.
    static func removingOutlines(listing url: String, from bytes: [UInt8]) -> [UInt8]? {
        guard XMLInput.isASCIICompatible(bytes) else { return nil }
        let tags = XMLTagScanner.tags(in: bytes)
        var elements: [Range<Int>] = []
        for (index, tag) in tags.enumerated() where tag.kind != .end && tag.localName == "outline" {
            guard let raw = tag.attribute("xmlurl", in: bytes), SourceList.feedURL(raw) == url else { continue }
            guard let element = elementRange(tags: tags, at: index) else { return nil }
            elements.append(element)
        }
        return removing(elements, from: bytes)
    }

    // MARK: - Private methods

    private static func outlineElement(url: String, title: String?, asciiOnly: Bool) -> String {
        let text = XMLEscaping.attributeValue(title ?? url, asciiOnly: asciiOnly)
        var element = "<outline type=\"rss\" text=\"\(text)\""
        if title != nil { element += " title=\"\(text)\"" }
        return element + " xmlUrl=\"\(XMLEscaping.attributeValue(url, asciiOnly: asciiOnly, isURL: true))\"/>"
    }

    /// The white space before the last child of `<body>` (the last start
    /// tag in `tags` that the document opened before its end), when that
    /// child starts its line.
    private static func lastChildIndent(in bytes: [UInt8], tags: ArraySlice<XMLTagScanner.Tag>) -> [UInt8]? {
        var depth = 0
        for tag in tags.reversed() {
            switch tag.kind {
            case .end:
                depth += 1
                continue
            case .start where depth == 0:
                return nil  // `<body>` itself: it has no children.
            case .start:
                depth -= 1
            case .empty:
                break
            }
            guard depth == 0 else { continue }
            let lineStart = startOfLine(in: bytes, at: tag.range.lowerBound)
            let indent = bytes[lineStart..<tag.range.lowerBound]
            return lineStart > 0 && indent.allSatisfy(isBlank) ? Array(indent) : nil
        }
        return nil
    }

    /// The range of the outline whose tag is `tags[index]`, through its end
    /// tag; `nil` when it holds another outline or is never closed.
    private static func elementRange(tags: [XMLTagScanner.Tag], at index: Int) -> Range<Int>? {
        let tag = tags[index]
        if tag.kind == .empty { return tag.range }
        var depth = 0
        for later in tags[(index + 1)...] {
            if later.kind != .end && later.localName == "outline" { return nil }
            switch later.kind {
            case .start: depth += 1
            case .empty: break
            case .end where depth > 0: depth -= 1
            case .end:
                return later.localName == "outline" ? tag.range.lowerBound..<later.range.upperBound : nil
            }
        }
        return nil
    }

    /// `bytes` without `ranges`, and without each line they leave holding
    /// only white space.
    private static func removing(_ ranges: [Range<Int>], from bytes: [UInt8]) -> [UInt8] {
        var isRemoved = [Bool](repeating: false, count: bytes.count)
        for range in ranges {
            for index in range { isRemoved[index] = true }
        }
        var edited: [UInt8] = []
        edited.reserveCapacity(bytes.count)
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
            let line = lineStart..<lineEnd
            let isTouched = line.contains { isRemoved[$0] }
            let isLeftBlank = line.allSatisfy { isRemoved[$0] || isBlank(bytes[$0]) || bytes[$0] == 0x0A }
            if !(isTouched && isLeftBlank) {
                edited += line.lazy.filter { !isRemoved[$0] }.map { bytes[$0] }
            }
            lineStart = lineEnd
        }
        return edited
    }

    /// The index just after the line feed before `index`, or 0.
    private static func startOfLine(in bytes: [UInt8], at index: Int) -> Int {
        bytes[..<index].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
    }

    /// Space, tab or carriage return: what may stand around an element on a
    /// line of its own.
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D
    }
}
