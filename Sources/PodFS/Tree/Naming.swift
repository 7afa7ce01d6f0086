import Feeds

/// File and directory names for shows and episodes: stable, safe and
/// predictable (docs/DESIGN.md, "File names").
///
/// Every name is one path component of at most 255 UTF-8 bytes in Unicode
/// Normalization Form C that contains no `/`, NUL, control, format (bidi,
/// zero-width, soft hyphen, tag…) or other default-ignorable character and no
/// noncharacter, does not start with `.` or `-`, and is unique (byte for
/// byte) within its directory. Collision suffixes go to the oldest episode
/// first, so a new episode at the top of a feed never renames an existing
/// file.
public enum Naming {
    // MARK: - Nested types

    /// What naming needs to know about one episode.
    public struct EpisodeNameInput: Sendable {
        /// The decoded episode title.
        public var title: String?

        /// Unix seconds UTC, when the feed's date parsed.
        public var published: Int64?

        /// The enclosure's MIME type.
        public var mimeType: String?

        /// The enclosure URL.
        public var url: String

        public init(title: String?, published: Int64?, mimeType: String?, url: String) {
            self.title = title
            self.published = published
            self.mimeType = mimeType
            self.url = url
        }
    }

    // MARK: - Public properties

    /// The longest name most Linux file systems and FUSE accept.
    public static let maximumNameBytes = 255

    // MARK: - Private constants

    /// MIME type (lowercased, without parameters) to extension.
    private static let extensionsByMIMEType: [String: String] = [
        "audio/mpeg": ".mp3", "audio/mp3": ".mp3", "audio/x-mp3": ".mp3", "audio/mpeg3": ".mp3",
        "audio/x-mpeg": ".mp3", "audio/x-mpeg-3": ".mp3", "audio/mpg": ".mp3", "x-audio/mp3": ".mp3",
        "audio/mp4": ".m4a", "audio/x-m4a": ".m4a", "audio/m4a": ".m4a", "audio/mp4a-latm": ".m4a",
        "audio/x-m4b": ".m4b", "audio/m4b": ".m4b",
        "audio/aac": ".aac", "audio/x-aac": ".aac", "audio/aacp": ".aac",
        "audio/ogg": ".ogg", "audio/vorbis": ".ogg", "application/ogg": ".ogg", "audio/x-ogg": ".ogg",
        "audio/opus": ".opus", "audio/flac": ".flac", "audio/x-flac": ".flac",
        "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/wave": ".wav", "audio/vnd.wave": ".wav",
        "audio/webm": ".weba", "audio/x-ms-wma": ".wma",
        "video/mp4": ".mp4", "video/x-m4v": ".m4v", "video/quicktime": ".mov", "video/webm": ".webm",
        "video/mpeg": ".mpg", "video/ogg": ".ogv", "video/x-matroska": ".mkv",
    ]

    /// Extensions taken from a URL path when the MIME type says nothing.
    private static let mediaExtensions: Set<String> = [
        "mp3", "m4a", "m4b", "aac", "ogg", "oga", "opus", "flac", "wav", "weba", "wma",
        "mp4", "m4v", "mov", "webm", "mpg", "mpeg", "ogv", "mkv",
    ]

    /// The emoji tag sequences (a black flag, tag letters, a cancel tag)
    /// that draw a flag: the only place tag characters are kept.
    private static let flagTags: Set<String> = ["gbeng", "gbsct", "gbwls"]

    // MARK: - Public methods

    /// A safe single path component from a decoded title: TAB, CR and LF
    /// become spaces; invisible characters go (see `visibleScalars`); the
    /// rest is put in Normalization Form C, so canonically equivalent titles
    /// give the same bytes; `/` becomes `_`; white space runs collapse to one
    /// space; both ends are trimmed; leading `.` and `-` go; nothing left (or
    /// dots only) gives "untitled"; at most 255 bytes.
    public static func sanitize(_ title: String?) -> String {
        // Most titles are plain ASCII: the same rules on bytes, without
        // asking Unicode's tables about every character (a thousand feeds
        // hold hundreds of thousands of titles).
        if let name = asciiSanitized(title ?? "") { return name }
        return sanitizedScalars(title)
    }

    /// `sanitize` without its ASCII fast path (tests compare the two).
    static func sanitizedScalars(_ title: String?) -> String {
        var scalars = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in normalized(visibleScalars(title ?? "")).unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = true
                continue
            }
            // Leading dots and dashes (and the spaces after them) go.
            if scalars.isEmpty, scalar == "." || scalar == "-" {
                pendingSpace = false
                continue
            }
            if pendingSpace, !scalars.isEmpty { scalars.append(" ") }
            pendingSpace = false
            scalars.append(scalar == "/" ? "_" : scalar)
        }
        let name = String(scalars)
        if name.isEmpty { return "untitled" }
        return cut(name, keeping: "")
    }

    /// `sanitize` for a title of printable ASCII, TAB, LF and CR only;
    /// `nil` for any other title. ASCII is already NFC, and of it only
    /// those three and the space are white space; nothing else is
    /// invisible.
    private static func asciiSanitized(_ title: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(title.utf8.count)
        var pendingSpace = false
        for byte in title.utf8 {
            switch byte {
            case 0x09, 0x0A, 0x0D, 0x20:
                pendingSpace = true
                continue
            case 0x21...0x7E:
                break
            default:
                return nil
            }
            if bytes.isEmpty, byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") {
                pendingSpace = false
                continue
            }
            if pendingSpace, !bytes.isEmpty { bytes.append(0x20) }
            pendingSpace = false
            bytes.append(byte == UInt8(ascii: "/") ? UInt8(ascii: "_") : byte)
        }
        if bytes.isEmpty { return "untitled" }
        return cut(String(decoding: bytes, as: UTF8.self), keeping: "")
    }

    /// Whether `scalar` draws nothing or changes how its neighbours draw,
    /// so that two names could look the same: controls (but TAB, LF and
    /// CR), format characters (bidi controls, zero-width characters, the
    /// soft hyphen, interlinear annotation marks, tag characters…), other
    /// default-ignorable code points (variation selectors, Hangul fillers,
    /// the combining grapheme joiner) and noncharacters. Taken from the
    /// Unicode properties, not from a list, so new ones are covered.
    /// Emoji sequences are the exception (see `visibleScalars`).
    public static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control: return !(scalar == "\t" || scalar == "\n" || scalar == "\r")
        case .format, .surrogate: return true
        default: return properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint
        }
    }

    /// The extension, with its dot, for an enclosure: from the MIME type
    /// table, else from the URL path when it names a known media type, else "".
    public static func fileExtension(mimeType: String?, url: String) -> String {
        if let mimeType {
            // Nearly every feed writes it plain ("audio/mpeg"): the key as it is.
            let plain = mimeType.utf8.allSatisfy { byte in
                byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: ";") && !(byte >= 0x41 && byte <= 0x5A)
            }
            if plain {
                if let known = extensionsByMIMEType[mimeType] { return known }
            } else {
                let essence = mimeType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
                // ASCII blanks dropped without Unicode's property tables, the
                // rest as before.
                let key = String(
                    String.UnicodeScalarView(
                        essence.lowercased().unicodeScalars.filter { scalar in
                            scalar.value < 0x80 ? !(scalar.value == 0x20 || (0x09...0x0D).contains(scalar.value))
                                : !scalar.properties.isWhitespace
                        }))
                if let known = extensionsByMIMEType[key] { return known }
            }
        }
        var path = Substring(url)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        if let scheme = path.firstRange(of: "://") {
            let afterScheme = path[scheme.upperBound...]
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? ""
        }
        guard let lastSegment = path.split(separator: "/").last,
            let dot = lastSegment.lastIndex(of: ".")
        else { return "" }
        let candidate = lastSegment[lastSegment.index(after: dot)...].lowercased()
        return mediaExtensions.contains(candidate) ? "." + candidate : ""
    }

    /// "YYYY-MM-DD " (UTC) for a publication date, "" for none.
    public static func datePrefix(_ published: Int64?) -> String {
        guard let published else { return "" }
        let (year, month, day) = FeedDate.civil(fromUnix: published)
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2)) "
    }

    /// Names for the episodes of one directory, in input order (feed
    /// document order). Each is date prefix + sanitised title + extension,
    /// cut to 255 bytes keeping the extension; duplicates get " (2)",
    /// " (3)", … before the extension, oldest episode first: by publication
    /// date, undated episodes before dated ones and bottom of the feed first.
    ///
    /// `keeping` maps input positions to the names those episodes already
    /// have (from before a refresh): they keep them, whatever their title
    /// says now and whichever episodes came or went, and the others get
    /// names that avoid them. Within a mount a file is never renamed.
    public static func episodeNames(_ inputs: [EpisodeNameInput], keeping: [Int: String] = [:]) -> [String] {
        let parts = inputs.map { input in
            (stem: datePrefix(input.published) + sanitize(input.title),
             ext: fileExtension(mimeType: input.mimeType, url: input.url))
        }
        let oldestFirst = inputs.indices.sorted { a, b in
            let dateA = inputs[a].published ?? Int64.min
            let dateB = inputs[b].published ?? Int64.min
            return dateA != dateB ? dateA < dateB : a > b
        }
        return uniqueNames(parts, assignmentOrder: oldestFirst, keeping: keeping)
    }

    /// `stem + suffix` cut to 255 bytes (keeping the suffix), made unique
    /// against `taken` with " (2)", " (3)", … before the suffix; the name is
    /// added to `taken`. For the files podfs adds next to episodes.
    public static func uniqueName(stem: String, suffix: String, taken: inout Set<[UInt8]>) -> String {
        let name = uniqueName(stem: stem, suffix: suffix) { taken.contains(Array($0.utf8)) }
        taken.insert(Array(name.utf8))
        return name
    }

    /// The same, asking `isTaken` of each name tried (a tree's own
    /// indexes, rather than a set of every name made for each new one).
    static func uniqueName(stem: String, suffix: String, isTaken: (String) -> Bool) -> String {
        var name = cut(stem, keeping: suffix)
        var counter = 2
        while isTaken(name) {
            name = cut(stem, keeping: " (\(counter))" + suffix)
            counter += 1
        }
        return name
    }

    /// Directory names for shows, in input order; duplicates get " (2)",
    /// " (3)", … in input order.
    public static func directoryNames(_ titles: [String?]) -> [String] {
        uniqueNames(titles.map { (stem: sanitize($0), ext: "") }, assignmentOrder: Array(titles.indices))
    }

    // MARK: - Private methods

    /// The scalars of `text` without the invisible ones (`isInvisible`),
    /// except where they are part of an emoji that draws differently with
    /// them: a zero-width joiner between two emoji (👩‍👧, one family
    /// glyph), a variation selector 15 or 16 right after an emoji (text or
    /// emoji style) and the tag letters of the flags of England, Scotland
    /// and Wales. Anywhere else they could hide text or make two names that
    /// look alike.
    private static func visibleScalars(_ text: String) -> String.UnicodeScalarView {
        let input = Array(text.unicodeScalars)
        var kept = String.UnicodeScalarView()
        var last: Unicode.Scalar?
        var position = 0
        while position < input.count {
            let scalar = input[position]
            position += 1
            if scalar.value == 0x1F3F4, let tags = flagTagCount(input, after: position - 1) {
                kept.append(contentsOf: input[(position - 1)..<(position + tags)])
                position += tags
                last = input[position - 1]
                continue
            }
            if isInvisible(scalar) {
                let joinsEmoji =
                    scalar.value == 0x200D && last.map(isEmojiEnd) == true && position < input.count
                    && isPictographic(input[position])
                let selectsStyle =
                    (scalar.value == 0xFE0E || scalar.value == 0xFE0F) && last.map(isPictographic) == true
                guard joinsEmoji || selectsStyle else { continue }
            }
            kept.append(scalar)
            last = scalar
        }
        return kept
    }

    /// An emoji that is not ASCII (`#`, `*` and digits have the emoji
    /// property for keycaps, and are no reason to keep a joiner).
    private static func isPictographic(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 0x7F && scalar.properties.isEmoji
    }

    /// What an emoji before a zero-width joiner may end with: the emoji, its
    /// variation selector 16 or a skin tone (an emoji itself).
    private static func isEmojiEnd(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value == 0xFE0F || isPictographic(scalar)
    }

    /// The number of tag characters (the cancel tag included) after the
    /// black flag at `flag` when they spell one of `flagTags`, else nil.
    private static func flagTagCount(_ scalars: [Unicode.Scalar], after flag: Int) -> Int? {
        var letters = ""
        var position = flag + 1
        while position < scalars.count, position - flag <= 8 {
            let value = scalars[position].value
            if value == 0xE007F {
                return flagTags.contains(letters) ? position - flag : nil
            }
            guard (0xE0020...0xE007E).contains(value), let letter = Unicode.Scalar(value - 0xE0000) else { return nil }
            letters.unicodeScalars.append(letter)
            position += 1
        }
        return nil
    }

    /// `scalars` in Normalization Form C (the standard library's own
    /// normaliser, which also backs `String`'s comparison; this target
    /// does not need Foundation for it).
    private static func normalized(_ scalars: String.UnicodeScalarView) -> String {
        String(decoding: String(scalars)._nfcCodeUnits, as: UTF8.self)
    }

    /// Gives each stem+ext a name unique by bytes, visiting entries in
    /// `assignmentOrder`; returns names in the entries' own order.
    private static func uniqueNames(
        _ parts: [(stem: String, ext: String)], assignmentOrder: [Int], keeping: [Int: String] = [:]
    ) -> [String] {
        var names = [String](repeating: "", count: parts.count)
        var taken = Set<[UInt8]>(minimumCapacity: parts.count + keeping.count)
        for (index, name) in keeping where parts.indices.contains(index) {
            names[index] = name
            taken.insert(Array(name.utf8))
        }
        for index in assignmentOrder where keeping[index] == nil {
            let (stem, ext) = parts[index]
            names[index] = uniqueName(stem: stem, suffix: ext, taken: &taken)
        }
        return names
    }

    /// `stem + suffix`, with `stem` shortened on a character boundary (and
    /// trailing spaces dropped) until the whole fits in 255 bytes.
    private static func cut(_ stem: String, keeping suffix: String) -> String {
        let budget = maximumNameBytes - suffix.utf8.count
        if stem.utf8.count <= budget { return stem + suffix }
        var kept = ""
        var used = 0
        for character in stem {
            let size = character.utf8.count
            if used + size > budget { break }
            kept.append(character)
            used += size
        }
        if kept.isEmpty {
            // One enormous grapheme cluster: fall back to scalar boundaries.
            var scalars = String.UnicodeScalarView()
            for scalar in stem.unicodeScalars {
                if used + scalar.utf8.count > budget { break }
                scalars.append(scalar)
                used += scalar.utf8.count
            }
            kept = String(scalars)
        }
        while kept.last == " " { kept.removeLast() }
        return kept + suffix
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
