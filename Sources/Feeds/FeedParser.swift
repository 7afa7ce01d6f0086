/// Reads podcast feeds: RSS 2.0 (with the iTunes namespace), Atom and
/// RSS 1.0/RDF, with Media RSS `media:content` as a fallback enclosure.
///
/// The parser is strict about safety and lenient about content: it refuses
/// documents that declare entities and never fetches anything, but it keeps
/// an episode whose date does not parse and recovers from the malformed XML
/// that real publishers serve (bare `&`, undefined entities, white space
/// before the XML declaration).
public enum FeedParser {
    // MARK: - Public methods

    /// Parses `bytes` as a feed; relative enclosure URLs resolve against
    /// `baseURL`, the URL the feed was fetched from.
    public static func parse(_ bytes: [UInt8], baseURL: String) throws(FeedError) -> ParsedFeed {
        let document = try XMLDocument(parsing: bytes, baseURL: baseURL)
        let root = document.root
        let feed: ParsedFeed
        switch (root.localName, root.vocabulary) {
        case ("rss", .plain):
            let channel = root.child("channel")
            let items = (channel?.children("item") ?? []) + root.children("item")
            feed = rss(channel: channel, items: items, baseURL: baseURL)
        case ("RDF", .rdf), ("RDF", .plain):
            let channel = root.child("channel")
            let items = root.children("item") + (channel?.children("item") ?? [])
            feed = rss(channel: channel, items: items, baseURL: baseURL)
        case ("channel", .plain):
            feed = rss(channel: root, items: root.children("item"), baseURL: baseURL)
        case ("feed", .atom), ("feed", .plain):
            feed = atom(root, baseURL: baseURL)
        default:
            throw FeedError(
                "not a podcast feed: the root element is <\(root.qualifiedName)>, "
                    + "expected <rss>, <feed> (Atom) or <rdf:RDF>")
        }
        // `withExtendedLifetime`: the elements point into the document's tree.
        return withExtendedLifetime(document) { feed }
    }

    // MARK: - Private types

    /// An enclosure as written, before resolving and choosing.
    private struct Candidate {
        var url: String?
        var length: String?
        var type: String?
    }

    /// Everything that makes two items exact duplicates of each other.
    private struct DuplicateKey: Hashable {
        var guid: String?
        var title: String?
        var published: Int64?
        var url: String
        var length: Int64?
        var type: String?

        init(_ episode: ParsedEpisode) {
            guid = episode.guid
            title = episode.title
            published = episode.published
            url = episode.enclosureURL
            length = episode.enclosureLength
            type = episode.enclosureType
        }
    }

    // MARK: - RSS 2.0 and RSS 1.0

    private static func rss(channel: XMLElement?, items: [XMLElement], baseURL: String) -> ParsedFeed {
        var feed = ParsedFeed()
        if let channel {
            feed.title = channel.child("title")?.trimmedText
                ?? channel.child("title", in: .itunes)?.trimmedText
            feed.lastBuildDate = firstDate([
                channel.child("lastBuildDate"), channel.child("pubDate"),
                channel.child("date", in: .dublinCore), channel.child("updated", in: .atom),
            ])
            let itunesImage = channel.child("image", in: .itunes).flatMap {
                $0.attribute("href") ?? $0.trimmedText
            }
            let rssImage = channel.child("image")?.child("url")?.trimmedText
            feed.imageURL = [itunesImage, rssImage].lazy.compactMap { $0 }
                .compactMap { FeedURL.resolveHTTP($0, base: baseURL) }.first
        }
        feed.episodes = unique(items.compactMap { rssEpisode($0, baseURL: baseURL) })
        return feed
    }

    private static func rssEpisode(_ item: XMLElement, baseURL: String) -> ParsedEpisode? {
        var candidates = item.children("enclosure").map {
            Candidate(
                url: $0.attribute("url", ignoringCase: true), length: $0.attribute("length"),
                type: $0.attribute("type"))
        }
        candidates += atomEnclosures(item.children("link", in: .atom))
        guard
            let enclosure = choose(candidates, baseURL: baseURL)
                ?? choose(mediaContents(item), baseURL: baseURL)
        else { return nil }
        var episode = enclosure
        episode.title = item.child("title")?.trimmedText
            ?? item.child("title", in: .itunes)?.trimmedText
        episode.guid = item.child("guid")?.trimmedText
            ?? item.attribute("about").map { $0.trimmingWhitespace() }.flatMap { $0.isEmpty ? nil : $0 }
        episode.published = firstDate([
            item.child("pubDate"), item.child("date", in: .dublinCore),
            item.child("published", in: .atom), item.child("updated", in: .atom),
        ])
        return episode
    }

    // MARK: - Atom

    private static func atom(_ root: XMLElement, baseURL: String) -> ParsedFeed {
        let vocabulary = root.vocabulary
        var feed = ParsedFeed()
        feed.title = root.child("title", in: vocabulary)?.trimmedText
        feed.lastBuildDate = firstDate([root.child("updated", in: vocabulary)])
        let images = [
            root.child("image", in: .itunes)?.attribute("href"),
            root.child("logo", in: vocabulary)?.trimmedText,
            root.child("icon", in: vocabulary)?.trimmedText,
        ]
        feed.imageURL = images.lazy.compactMap { $0 }
            .compactMap { FeedURL.resolveHTTP($0, base: baseURL) }.first
        feed.episodes = unique(
            root.children("entry", in: vocabulary).compactMap { entry -> ParsedEpisode? in
                let links = entry.children("link", in: vocabulary)
                guard
                    var episode = choose(atomEnclosures(links), baseURL: baseURL)
                        ?? choose(mediaContents(entry), baseURL: baseURL)
                else { return nil }
                episode.title = entry.child("title", in: vocabulary)?.trimmedText
                episode.guid = entry.child("id", in: vocabulary)?.trimmedText
                episode.published = firstDate([
                    entry.child("published", in: vocabulary), entry.child("issued", in: vocabulary),
                    entry.child("updated", in: vocabulary), entry.child("modified", in: vocabulary),
                ])
                return episode
            })
        return feed
    }

    private static func atomEnclosures(_ links: [XMLElement]) -> [Candidate] {
        links.filter { $0.attribute("rel")?.trimmingWhitespace().lowercased() == "enclosure" }
            .map {
                Candidate(url: $0.attribute("href"), length: $0.attribute("length"), type: $0.attribute("type"))
            }
    }

    // MARK: - Enclosures

    /// `media:content` directly in the item and inside `media:group`.
    private static func mediaContents(_ item: XMLElement) -> [Candidate] {
        let groups = item.children("group", in: .media)
        let contents = item.children("content", in: .media) + groups.flatMap { $0.children("content", in: .media) }
        return contents.map {
            Candidate(url: $0.attribute("url"), length: $0.attribute("fileSize"), type: $0.attribute("type"))
        }
    }

    /// The first usable audio or video enclosure, else the first usable one
    /// of any type, with its URL resolved.
    private static func choose(_ candidates: [Candidate], baseURL: String) -> ParsedEpisode? {
        let usable = candidates.compactMap { candidate -> ParsedEpisode? in
            guard let raw = candidate.url, let url = FeedURL.resolveHTTP(raw, base: baseURL) else {
                return nil
            }
            let type = candidate.type.map { $0.trimmingWhitespace().lowercased() }
            return ParsedEpisode(
                enclosureURL: url, enclosureLength: length(candidate.length),
                enclosureType: type?.isEmpty == false ? type : nil)
        }
        return usable.first { episode in
            guard let type = episode.enclosureType else { return false }
            return type.hasPrefix("audio/") || type.hasPrefix("video/")
        } ?? usable.first
    }

    private static func length(_ text: String?) -> Int64? {
        guard let text, let value = Int64(text.trimmingWhitespace()), value > 0 else { return nil }
        return value
    }

    // MARK: - Helpers

    private static func firstDate(_ elements: [XMLElement?]) -> Int64? {
        for element in elements {
            if let text = element?.trimmedText, let date = FeedDate.parse(text) {
                return date
            }
        }
        return nil
    }

    /// Drops items that repeat an earlier item exactly, keeping order.
    private static func unique(_ episodes: [ParsedEpisode]) -> [ParsedEpisode] {
        var seen = Set<DuplicateKey>()
        return episodes.filter { seen.insert(DuplicateKey($0)).inserted }
    }
}
