import Feeds
import Testing

/// Character encodings: BOMs, declarations, the windows-1252 that feeds
/// declare as Latin-1, and bytes that are not what the document says.
@Suite struct FeedEncodingTests {
    // MARK: - Helpers

    private func rss(_ items: String, channel: String = "<title>Show</title>") -> String {
        Fixtures.rss(items, channel: channel)
    }

    private func titled(_ title: String) -> String {
        rss("<item><title>\(title)</title><enclosure url='http://x.example/a.mp3'/></item>")
    }

    /// An ASCII prologue and epilogue around raw title bytes.
    private func latinFeed(declaring encoding: String?, title: [UInt8]) -> [UInt8] {
        let declaration = encoding.map { "<?xml version='1.0' encoding='\($0)'?>" } ?? ""
        return Array("\(declaration)<rss><channel><title>".utf8) + title
            + Array(
                "</title><item><title>E</title><enclosure url='http://x.example/e.mp3'/></item></channel></rss>".utf8)
    }

    // MARK: - Unicode

    @Test func readsUTF8WithBOMAndWhitespaceAfterIt() throws {
        let feed = try Fixtures.parse([0xEF, 0xBB, 0xBF] + Array(("\r\n  " + titled("Größe ₿")).utf8))
        #expect(feed.episodes.first?.title == "Größe ₿")
    }

    @Test func readsUTF16LittleEndianWithBOM() throws {
        let xml = titled("Größe ₿").replacingUTF8Declaration(with: "UTF-16")
        let feed = try Fixtures.parse(Fixtures.utf16LittleEndian(xml))
        #expect(feed.episodes.first?.title == "Größe ₿")
    }

    @Test func readsUTF16BigEndianWithBOM() throws {
        let xml = titled("Größe ₿").replacingUTF8Declaration(with: "UTF-16")
        let feed = try Fixtures.parse(Fixtures.utf16BigEndian(xml))
        #expect(feed.episodes.first?.title == "Größe ₿")
    }

    @Test func readsUTF16WithoutBOMInBothByteOrders() throws {
        let xml = titled("Größe").replacingUTF8Declaration(with: "UTF-16")
        #expect(try Fixtures.parse(Fixtures.utf16BigEndian(xml, bom: false)).episodes.first?.title == "Größe")
        #expect(try Fixtures.parse(Fixtures.utf16LittleEndian(xml, bom: false)).episodes.first?.title == "Größe")
    }

    @Test func readsUTF16WithWhitespaceBeforeTheDeclaration() throws {
        let xml = "\n \t" + titled("Größe").replacingUTF8Declaration(with: "UTF-16")
        #expect(try Fixtures.parse(Fixtures.utf16LittleEndian(xml)).episodes.first?.title == "Größe")
        #expect(try Fixtures.parse(Fixtures.utf16BigEndian(xml)).episodes.first?.title == "Größe")
    }

    @Test func readsAnAstralCharacterInUTF16() throws {
        let xml = titled("Pod 🎙️").replacingUTF8Declaration(with: "UTF-16")
        #expect(try Fixtures.parse(Fixtures.utf16LittleEndian(xml)).episodes.first?.title == "Pod 🎙️")
    }

    // MARK: - Legacy encodings

    @Test func readsDeclaredLatin1() throws {
        let feed = try Fixtures.parse(latinFeed(declaring: "ISO-8859-1", title: [0x47, 0x72, 0xF6, 0xDF, 0x65]))
        #expect(feed.title == "Größe")
    }

    @Test func readsDeclaredWindows1252() throws {
        // 0x80 is the euro sign, 0x93/0x94 curly quotes, 0x96 an en dash.
        let feed = try Fixtures.parse(
            latinFeed(declaring: "windows-1252", title: [0x80, 0x20, 0x93, 0x71, 0x94, 0x20, 0x96, 0x20, 0xE9]))
        #expect(feed.title == "€ “q” – é")
        #expect(feed.episodes.count == 1)
    }

    @Test func readsLatin1DeclarationsAsWindows1252LikeBrowsers() throws {
        // 0x92 is U+0092 (a C1 control) in Latin-1 and ’ in windows-1252,
        // which is what the publisher typed.
        for label in ["ISO-8859-1", "iso-8859-1", "latin1", "US-ASCII"] {
            let feed = try Fixtures.parse(latinFeed(declaring: label, title: [0x49, 0x92, 0x6D, 0x20, 0xE9]))
            #expect(feed.title == "I’m é", "\(label)")
        }
    }

    @Test func keepsLatin1WhenAByteIsUndefinedInWindows1252() throws {
        // 0x81 has no windows-1252 meaning; the whole document stays Latin-1.
        let feed = try Fixtures.parse(latinFeed(declaring: "ISO-8859-1", title: [0x92, 0x81, 0xE9]))
        #expect(feed.title?.unicodeScalars.map(\.value) == [0x92, 0x81, 0xE9])
    }

    @Test func readsOtherDeclaredEncodings() throws {
        // "Привет" in KOI8-R and "Καλη" in ISO-8859-7.
        let russian = try Fixtures.parse(latinFeed(declaring: "KOI8-R", title: [0xF0, 0xD2, 0xC9, 0xD7, 0xC5, 0xD4]))
        #expect(russian.title == "Привет")
        let greek = try Fixtures.parse(latinFeed(declaring: "ISO-8859-7", title: [0xCA, 0xE1, 0xEB, 0xE7]))
        #expect(greek.title == "Καλη")
    }

    @Test func readsStrayLatin1BytesInAUTF8FeedAsWindows1252() throws {
        // UTF-8 "ö" next to a raw Latin-1 "é" and a windows-1252 "’": the
        // strict parse fails, the repair keeps every character.
        let title: [UInt8] = [0x47, 0x72, 0xC3, 0xB6, 0xDF, 0x65, 0x20, 0x63, 0x61, 0x66, 0xE9, 0x92]
        for declaration in [nil, "UTF-8"] {
            let feed = try Fixtures.parse(latinFeed(declaring: declaration, title: title))
            #expect(feed.title == "Größe café’", "\(declaration ?? "none")")
            #expect(feed.episodes.count == 1)
            #expect(feed.warnings.contains { $0.contains("windows-1252") })
        }
    }

    @Test func keepsUTF8DeclaredAsLatin1AsDeclared() throws {
        // Declared encodings win, as in every browser: a lie gives mojibake
        // (FeedKit's Ampersand.xml does this), not an error.
        let feed = try Fixtures.parse(latinFeed(declaring: "ISO-8859-1", title: Array("fórår".utf8)))
        #expect(feed.title == "fÃ³rÃ¥r")
    }
}
