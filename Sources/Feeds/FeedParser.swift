/// Reads podcast feeds: RSS 2.0 (with the iTunes and Podcasting 2.0
/// namespaces), Atom and RSS 1.0/RDF (with the `enc:` enclosure module), with
/// Media RSS `media:content` as a fallback enclosure.
///
/// The parser is strict about safety and lenient about content: it refuses
/// documents that declare entities and never fetches anything, but it keeps
/// an episode whose date does not parse and recovers from the malformed XML
/// that real publishers serve (bare `&`, HTML entities, control characters,
/// bytes that are not UTF-8, white space before the XML declaration). What it
/// recovers is faithful: an item that the document cuts off or that libxml2
/// had to repair around is left out whole, never shown with a shortened URL;
/// a damaged document with nothing intact to show is an error.
public enum FeedParser {
    // MARK: - Nested types

    /// An enclosure as written, before resolving and choosing.
    private struct Candidate {
        var url: String?
        var length: String?
        var type: String?
    }

    /// Two items are the same episode when both their identity and their
    /// enclosure URL agree.
    private struct DuplicateKey: Hashable {
        var identity: String
        var url: String
    }

    /// The elements an item's fields come from: the first of each kind that
    /// has one value, all of each kind that has several.
    private struct ItemElements {
        var title: XMLElement?
        var itunesTitle: XMLElement?
        var guid: XMLElement?
        var enclosures: [Candidate] = []
        var mediaContents: [Candidate] = []
        var image: XMLElement?
        var transcripts: [XMLElement] = []
        var chapters: [XMLElement] = []
    }

    // MARK: - Private constants

    /// The elements whose text the parser reads, by local name; the text
    /// of every other element (show notes above all) is never built. Add a
    /// name here before reading a new element's text.
    private static let textElements: Set<String> = [
        "title", "guid", "id", "pubDate", "lastBuildDate", "date", "published", "updated", "issued", "modified",
        "url", "logo", "icon", "image", "new-feed-url",
    ]

    /// Where an RSS item's date comes from, best first, whatever the order
    /// in the document.
    private static let rssDates: [(StaticString, XMLElement.Vocabulary)] = [
        ("pubDate", .plain), ("date", .dublinCore), ("published", .atom), ("updated", .atom),
    ]

    /// Where an Atom entry's date comes from, best first, in the feed's
    /// vocabulary.
    private static let atomDates: [StaticString] = ["published", "issued", "updated", "modified"]

    // MARK: - Public methods

    /// Parses `bytes` as a feed; relative URLs resolve against `baseURL`, the
    /// URL the feed was fetched from.
    public static func parse(_ bytes: [UInt8], baseURL: String) throws(FeedError) -> ParsedFeed {
        let document = try XMLDocument(parsing: bytes, baseURL: baseURL, textOf: textElements)
        // The elements point into the document's tree: keep it alive.
        return try withExtendedLifetime(document) { () throws(FeedError) -> ParsedFeed in
            try parse(document, baseURL: baseURL)
        }
    }

    // MARK: - Documents

    private static func parse(_ document: XMLDocument, baseURL: String) throws(FeedError) -> ParsedFeed {
        let root = document.root
        var feed: ParsedFeed
        var items: [XMLElement]
        switch (root.localName, root.vocabulary) {
        case ("rss", .plain):
            let channel = root.child("channel")
            items = (channel?.children("item") ?? []) + root.children("item")
            feed = channelFields(channel, baseURL: baseURL)
        case ("RDF", .rdf), ("RDF", .plain):
            let channel = root.child("channel")
            items = root.children("item") + (channel?.children("item") ?? [])
            feed = channelFields(channel, baseURL: baseURL)
        case ("channel", .plain):
            items = root.children("item")
            feed = channelFields(root, baseURL: baseURL)
        case ("feed", .atom), ("feed", .plain):
            items = root.children("entry", in: root.vocabulary)
            feed = atomFeedFields(root, baseURL: baseURL)
        default:
            throw FeedError(
                "not a podcast feed: the root element is <\(root.qualifiedName)>, "
                    + "expected <rss>, <feed> (Atom) or <rdf:RDF>")
        }
        let isAtom = root.isNamed("feed", in: root.vocabulary)
        var episodes: [ParsedEpisode] = []
        episodes.reserveCapacity(items.count)
        var dropped = 0
        for item in items {
            guard item.isIntact else {
                dropped += 1
                continue
            }
            let episode =
                isAtom
                ? atomEpisode(item, vocabulary: root.vocabulary, baseURL: baseURL) : rssEpisode(item, baseURL: baseURL)
            if let episode { episodes.append(episode) }
        }
        feed.episodes = unique(episodes)
        guard document.isRecovered else { return feed }

        feed.warnings = document.warnings
        if dropped > 0 {
            feed.warnings.append("left out \(dropped) items that the document cuts off or damages")
        }
        if !root.isIntact {
            feed.endsEarly = true
            feed.warnings.append("the document does not end with a whole </\(root.qualifiedName)>: it may be truncated")
        }
        if feed.episodes.isEmpty, dropped > 0 || !root.isIntact {
            throw FeedError(
                "not well-formed XML: \(document.problem ?? "unknown error"); no episode is intact")
        }
        return feed
    }

    // MARK: - RSS 2.0 and RSS 1.0

    private static func channelFields(_ channel: XMLElement?, baseURL: String) -> ParsedFeed {
        var feed = ParsedFeed()
        guard let channel else { return feed }
        feed.title = channel.child("title")?.trimmedText ?? channel.child("title", in: .itunes)?.trimmedText
        feed.lastBuildDate = firstDate([
            channel.child("lastBuildDate"), channel.child("pubDate"),
            channel.child("date", in: .dublinCore), channel.child("updated", in: .atom),
        ])
        let itunesImage = channel.child("image", in: .itunes).flatMap(imageReference)
        let rssImage = channel.child("image")?.child("url")?.trimmedText
        feed.imageURL =
            [itunesImage, rssImage].lazy.compactMap { $0 }
            .compactMap { FeedURL.resolveHTTP($0, base: baseURL) }.first
        feed.newFeedURL = channel.child("new-feed-url", in: .itunes)?.trimmedText
            .flatMap { FeedURL.resolveHTTP($0, base: baseURL) }
        feed.showGUID = channel.child("guid", in: .podcastIndex)?.trimmedText.flatMap { $0.isEmpty ? nil : $0 }
        return feed
    }

    private static func rssEpisode(_ item: XMLElement, baseURL: String) -> ParsedEpisode? {
        var elements = ItemElements()
        // One walk, dispatching on the vocabulary, then on the name's bytes.
        for child in item.children {
            switch child.vocabulary {
            case .plain:
                if child.hasLocalName("enclosure") {
                    elements.enclosures.append(
                        Candidate(
                            url: child.attribute("url", ignoringCase: true), length: child.attribute("length"),
                            type: child.attribute("type")))
                } else if child.hasLocalName("title") {
                    elements.title = elements.title ?? child
                } else if child.hasLocalName("guid") {
                    elements.guid = elements.guid ?? child
                }
            case .enclosureModule where child.hasLocalName("enclosure"):
                elements.enclosures.append(
                    Candidate(
                        url: child.attribute("resource") ?? child.attribute("url"),
                        length: child.attribute("length"), type: child.attribute("type")))
            case .atom where child.hasLocalName("link"):
                if let enclosure = atomEnclosure(child) { elements.enclosures.append(enclosure) }
            case .itunes where child.hasLocalName("title"):
                elements.itunesTitle = elements.itunesTitle ?? child
            default:
                collectShared(child, into: &elements)
            }
        }
        guard
            var episode = choose(elements.enclosures, baseURL: baseURL)
                ?? choose(elements.mediaContents, baseURL: baseURL)
        else { return nil }
        episode.title = elements.title?.trimmedText ?? elements.itunesTitle?.trimmedText
        episode.guid = elements.guid?.trimmedText ?? nonEmpty(item.attribute("about"))
        // pubDate first, then dc:date, then Atom's dates, whatever the order
        // in the document.
        episode.published = firstDate(among: item, ranked: rssDates)
        addExtras(elements, to: &episode, baseURL: baseURL)
        return episode
    }

    // MARK: - Atom

    private static func atomFeedFields(_ root: XMLElement, baseURL: String) -> ParsedFeed {
        let vocabulary = root.vocabulary
        var feed = ParsedFeed()
        feed.title = root.child("title", in: vocabulary)?.trimmedText
        feed.lastBuildDate = firstDate([root.child("updated", in: vocabulary), root.child("modified", in: vocabulary)])
        let base = root.baseURL() ?? baseURL
        let images = [
            root.child("image", in: .itunes).flatMap(imageReference),
            root.child("logo", in: vocabulary)?.trimmedText,
            root.child("icon", in: vocabulary)?.trimmedText,
        ]
        feed.imageURL = images.lazy.compactMap { $0 }.compactMap { FeedURL.resolveHTTP($0, base: base) }.first
        return feed
    }

    private static func atomEpisode(
        _ entry: XMLElement, vocabulary: XMLElement.Vocabulary, baseURL: String
    ) -> ParsedEpisode? {
        var elements = ItemElements()
        var enclosures: [Candidate] = []
        for child in entry.children {
            if child.vocabulary == vocabulary {
                if child.hasLocalName("link") {
                    if let enclosure = atomEnclosure(child) { enclosures.append(enclosure) }
                } else if child.hasLocalName("title") {
                    elements.title = elements.title ?? child
                } else if child.hasLocalName("id") {
                    elements.guid = elements.guid ?? child
                }
            } else {
                collectShared(child, into: &elements)
            }
        }
        // Atom resolves relative links against `xml:base` where given.
        let base = entry.baseURL() ?? baseURL
        guard
            var episode = choose(enclosures, baseURL: base)
                ?? choose(elements.mediaContents, baseURL: base)
        else { return nil }
        episode.title = elements.title?.trimmedText
        episode.guid = elements.guid?.trimmedText
        episode.published = firstDate(among: entry, ranked: atomDates.map { ($0, vocabulary) })
        addExtras(elements, to: &episode, baseURL: base)
        return episode
    }

    /// A link that says it is an enclosure, as a candidate.
    private static func atomEnclosure(_ link: XMLElement) -> Candidate? {
        guard link.attribute("rel")?.trimmingWhitespace().lowercased() == "enclosure" else { return nil }
        return Candidate(url: link.attribute("href"), length: link.attribute("length"), type: link.attribute("type"))
    }

    // MARK: - Fields every format shares

    /// Media RSS, `itunes:image` and the Podcasting 2.0 links.
    private static func collectShared(_ child: XMLElement, into elements: inout ItemElements) {
        switch child.vocabulary {
        case .media where child.hasLocalName("content"):
            if let content = mediaContent(child) { elements.mediaContents.append(content) }
        case .media where child.hasLocalName("group") && child.isIntact:
            for content in child.children where content.isNamed("content", in: .media) {
                if let content = mediaContent(content) { elements.mediaContents.append(content) }
            }
        case .itunes where child.hasLocalName("image"):
            elements.image = elements.image ?? child
        case .podcastIndex where child.hasLocalName("transcript"):
            elements.transcripts.append(child)
        case .podcastIndex where child.hasLocalName("chapters"):
            elements.chapters.append(child)
        default:
            break
        }
    }

    private static func addExtras(_ elements: ItemElements, to episode: inout ParsedEpisode, baseURL: String) {
        episode.imageURL = elements.image.flatMap(imageReference).flatMap { FeedURL.resolveHTTP($0, base: baseURL) }
        var seen = Set<String>()
        episode.transcripts = elements.transcripts.compactMap { element in
            guard let url = element.attribute("url").flatMap({ FeedURL.resolveHTTP($0, base: baseURL) }),
                seen.insert(url).inserted
            else { return nil }
            return ParsedTranscript(
                url: url, type: normalizedType(element.attribute("type")),
                language: nonEmpty(element.attribute("language")), rel: nonEmpty(element.attribute("rel")))
        }
        episode.chapters =
            elements.chapters.lazy.compactMap { element in
                element.attribute("url").flatMap { FeedURL.resolveHTTP($0, base: baseURL) }
                    .map { ParsedChapters(url: $0, type: normalizedType(element.attribute("type"))) }
            }.first
    }

    /// `itunes:image`'s `href`, or its text as some feeds write it.
    private static func imageReference(_ element: XMLElement) -> String? {
        element.attribute("href") ?? element.trimmedText
    }

    // MARK: - Enclosures

    /// A `media:content` element as a candidate, unless it says it is not
    /// audio or video (thumbnails, documents).
    private static func mediaContent(_ content: XMLElement) -> Candidate? {
        let type = normalizedType(content.attribute("type")) ?? ""
        let medium = content.attribute("medium")?.trimmingWhitespace().lowercased() ?? ""
        switch medium {
        case "image", "document", "executable": return nil
        default: break
        }
        if type.hasPrefix("image/") || type.hasPrefix("text/") { return nil }
        return Candidate(url: content.attribute("url"), length: content.attribute("fileSize"), type: type)
    }

    /// The first usable audio or video enclosure, else the first usable one
    /// of any type, with its URL resolved.
    private static func choose(_ candidates: [Candidate], baseURL: String) -> ParsedEpisode? {
        var firstUsable: ParsedEpisode?
        for candidate in candidates {
            guard let raw = candidate.url, let url = FeedURL.resolveHTTP(raw, base: baseURL) else { continue }
            let type = normalizedType(candidate.type)
            let episode = ParsedEpisode(
                enclosureURL: url, enclosureLength: length(candidate.length), enclosureType: type)
            if let type, type.hasPrefix("audio/") || type.hasPrefix("video/") { return episode }
            firstUsable = firstUsable ?? episode
        }
        return firstUsable
    }

    /// A declared length of plain decimal digits in `ParsedEpisode.lengthRange`;
    /// anything else (signs, exponents, hex, more than a file can be) is
    /// no length at all, as if the feed had left it out.
    private static func length(_ text: String?) -> Int64? {
        guard let text = nonEmpty(text), !text.isEmpty, text.utf8.count <= 19,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int64(text), ParsedEpisode.lengthRange.contains(value)
        else { return nil }
        return value
    }

    // MARK: - Helpers

    private static func normalizedType(_ text: String?) -> String? {
        nonEmpty(text)?.lowercased()
    }

    /// An attribute value that is not a URL, trimmed, with the characters
    /// XML forbids removed as from text.
    private static func nonEmpty(_ text: String?) -> String? {
        guard let value = text?.removingDamageMarkers().trimmingWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    /// The first child of `parent` whose text is a date, trying the
    /// children of each name in document order, name by name.
    private static func firstDate(
        among parent: XMLElement, ranked names: [(StaticString, XMLElement.Vocabulary)]
    ) -> Int64? {
        for (name, vocabulary) in names {
            for child in parent.children where child.isNamed(name, in: vocabulary) {
                if let text = child.trimmedText, let date = FeedDate.parse(text) {
                    return date
                }
            }
        }
        return nil
    }

    private static func firstDate(_ elements: [XMLElement?]) -> Int64? {
        for element in elements {
            if let text = element?.trimmedText, let date = FeedDate.parse(text) {
                return date
            }
        }
        return nil
    }

    /// Drops items that repeat an earlier item's identity and enclosure URL,
    /// keeping the first and the order.
    private static func unique(_ episodes: [ParsedEpisode]) -> [ParsedEpisode] {
        var seen = Set<DuplicateKey>(minimumCapacity: episodes.count)
        return episodes.filter { seen.insert(DuplicateKey(identity: $0.identity, url: $0.enclosureURL)).inserted }
    }
}
