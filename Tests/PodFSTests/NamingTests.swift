import PodFS
import Testing

/// File and directory names (DESIGN.md, "File names are stable, safe and
/// predictable").
@Suite struct NamingTests {
    // MARK: - Helpers

    private func input(
        _ title: String?, _ published: Int64? = nil, mime: String? = "audio/mpeg",
        url: String = "https://x.example/a"
    ) -> Naming.EpisodeNameInput {
        Naming.EpisodeNameInput(title: title, published: published, mimeType: mime, url: url)
    }

    // MARK: - Sanitising

    @Test func controlCharactersGoAndLineBreaksBecomeSpaces() {
        #expect(Naming.sanitize("a\tb\r\nc") == "a b c")
        #expect(Naming.sanitize("a\u{0}b\u{7}c\u{7F}d\u{85}e\u{9B}f") == "abcdef")
    }

    @Test func bidiAndZeroWidthCharactersGo() {
        #expect(Naming.sanitize("evil\u{202E}3pm.exe") == "evil3pm.exe")
        #expect(Naming.sanitize("a\u{200B}b\u{200D}c\u{FEFF}d\u{2066}e\u{2069}\u{200E}") == "abcde")
    }

    @Test func formatAndOtherInvisibleCharactersGo() {
        // Soft hyphen, interlinear annotation marks, tag characters.
        #expect(Naming.sanitize("in\u{AD}visible") == "invisible")
        #expect(Naming.sanitize("a\u{FFF9}b\u{FFFA}c\u{FFFB}d") == "abcd")
        #expect(Naming.sanitize("Show\u{E0001}\u{E0068}\u{E0069}\u{E007F} 1") == "Show 1")
        // Other default-ignorable code points: Hangul fillers (a name that
        // draws as nothing), the combining grapheme joiner, a variation
        // selector after a letter; and noncharacters.
        #expect(Naming.sanitize("\u{3164}\u{115F}") == "untitled")
        #expect(Naming.sanitize("a\u{34F}b\u{FE00}c") == "abc")
        // Noncharacters (a literal cannot hold them).
        let noncharacters = [0xFFFE, 0xFDD0, 0x10FFFF].compactMap { Unicode.Scalar(UInt32($0)) }.map(String.init)
        #expect(noncharacters.count == 3)
        #expect(Naming.sanitize("d" + noncharacters.joined(separator: "e")) == "dee")
        // Visible format-free neighbours stay: private use and unassigned.
        #expect(Naming.sanitize("\u{E000}\u{F8FF}") == "\u{E000}\u{F8FF}")
    }

    @Test(arguments: [
        0x00AD, 0x0600, 0x061C, 0x180E, 0x200B, 0x200E, 0x202E, 0x2060, 0x2066, 0xFEFF, 0xFFF9, 0xFFFB,
        0x1D173, 0xE0001, 0xE0020, 0xE007F, 0x115F, 0x3164, 0xFFA0, 0x034F, 0xFE0F, 0xE0100, 0x0085, 0x009B,
    ] as [UInt32])
    func everyInvisibleCharacterGoesBetweenLetters(_ value: UInt32) throws {
        let scalar = try #require(Unicode.Scalar(value))
        #expect(Naming.isInvisible(scalar))
        #expect(Naming.sanitize("a" + String(scalar) + "b") == "ab")
    }

    @Test func emojiKeepTheirJoinersSelectorsAndFlagTags() {
        // A zero-width joiner between two emoji draws one glyph (a family,
        // not a woman and a girl): kept; anywhere else it goes.
        #expect(Naming.sanitize("👩\u{200D}👧") == "👩\u{200D}👧")
        #expect(Naming.sanitize("👁\u{FE0F}\u{200D}🗨\u{FE0F}") == "👁\u{FE0F}\u{200D}🗨\u{FE0F}")
        #expect(Naming.sanitize("👍🏽\u{200D}👧") == "👍🏽\u{200D}👧")
        #expect(Naming.sanitize("a\u{200D}b 👩\u{200D} \u{200D}👧 1\u{200D}👧") == "ab 👩 👧 1👧")
        #expect(Naming.sanitize("👩\u{200D}\u{200D}👧") == "👩\u{200D}👧")
        // Emoji or text style after an emoji: kept; after a letter: gone.
        #expect(Naming.sanitize("\u{2764}\u{FE0F} a\u{FE0F}") == "\u{2764}\u{FE0F} a")
        // The flag of England keeps its tags; a flag spelling nothing loses them.
        let england = "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}"
        #expect(Naming.sanitize("Go " + england) == "Go " + england)
        #expect(Naming.sanitize("🏴\u{E0068}\u{E0069}\u{E007F}x") == "🏴x")
        #expect(Naming.sanitize("🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}") == "🏴")
    }

    // MARK: - Normalisation

    @Test func namesAreInNormalizationFormC() {
        let decomposed = "Cafe\u{301} Gro\u{308}\u{DF}e \u{1100}\u{1161}\u{11A8}"
        #expect(Array(Naming.sanitize(decomposed).utf8) == Array("Caf\u{E9} Gr\u{F6}\u{DF}e \u{AC01}".utf8))
        // Marks out of canonical order are reordered.
        #expect(Array(Naming.sanitize("q\u{307}\u{323}").utf8) == Array("q\u{323}\u{307}".utf8))
        // An invisible character between a letter and its accent goes
        // first, then the two compose.
        #expect(Array(Naming.sanitize("e\u{200B}\u{301}").utf8) == Array("\u{E9}".utf8))
        #expect(Array(Naming.directoryNames(["A\u{30A}"])[0].utf8) == Array("\u{C5}".utf8))
    }

    @Test func slashBecomesUnderscore() {
        #expect(Naming.sanitize("Giant Bombcast 07/19/2016") == "Giant Bombcast 07_19_2016")
        #expect(Naming.sanitize("/") == "_")
    }

    @Test func whiteSpaceRunsCollapseAndEndsAreTrimmed() {
        #expect(Naming.sanitize("  Design   Details \u{A0}\u{2003} 12  ") == "Design Details 12")
        #expect(Naming.sanitize(" \t\n ") == "untitled")
    }

    @Test func emptyAndDotsOnlyBecomeUntitled() {
        #expect(Naming.sanitize(nil) == "untitled")
        #expect(Naming.sanitize("") == "untitled")
        #expect(Naming.sanitize(".") == "untitled")
        #expect(Naming.sanitize("..") == "untitled")
        #expect(Naming.sanitize(". . .") == "untitled")
        #expect(Naming.sanitize("\u{200B}") == "untitled")
    }

    @Test func namesNeverStartWithDotOrDash() {
        #expect(Naming.sanitize(".hidden") == "hidden")
        #expect(Naming.sanitize("-rf *") == "rf *")
        #expect(Naming.sanitize("--- . -x") == "x")
        #expect(Naming.sanitize("...And Justice") == "And Justice")
        #expect(Naming.sanitize("a.b-c") == "a.b-c")
    }

    @Test func keepsOtherPunctuationAndScripts() {
        #expect(Naming.sanitize("Episode 232: \"HTTP/2\" & ₿? — ‘ok’") == "Episode 232: \"HTTP_2\" & ₿? — ‘ok’")
        #expect(Naming.sanitize("Größe 日本語") == "Größe 日本語")
    }

    // MARK: - Length

    @Test func longNamesAreCutOnACharacterBoundaryKeepingTheExtension() {
        let title = String(repeating: "ä", count: 200)  // 400 bytes
        let names = Naming.episodeNames([input(title, 0)])
        let name = names[0]
        #expect(name.utf8.count <= 255)
        #expect(name.hasPrefix("1970-01-01 ä"))
        #expect(name.hasSuffix("ä.mp3"))
        // 255 - 11 (date) - 4 (".mp3") = 240 bytes = 120 two-byte characters.
        #expect(name.utf8.count == 255)
        // Flags are two scalars (8 bytes) each: never split one.
        let flags = String(repeating: "🇩🇪", count: 40)
        let cut = Naming.episodeNames([input(flags, nil)])[0]
        #expect(cut == String(repeating: "🇩🇪", count: 31) + ".mp3")
        // A joiner outside an emoji sequence goes like every zero-width character.
        #expect(Naming.sanitize("👩\u{200D}") == "👩")
        #expect(Naming.sanitize(String(repeating: "x", count: 300)).utf8.count == 255)
    }

    @Test func collisionSuffixesFitIn255Bytes() {
        let title = String(repeating: "é", count: 200)
        let names = Naming.episodeNames([input(title, 5), input(title, 5), input(title, 5)])
        #expect(Set(names).count == 3)
        #expect(names.allSatisfy { $0.utf8.count <= 255 && $0.hasSuffix(".mp3") })
        #expect(names.filter { $0.hasSuffix(" (2).mp3") }.count == 1)
    }

    // MARK: - Extensions

    @Test(arguments: [
        ("audio/mpeg", ".mp3"), ("audio/mp3", ".mp3"), ("AUDIO/MPEG; charset=binary", ".mp3"),
        ("x-audio/mp3", ".mp3"), ("audio/mp4", ".m4a"), ("audio/x-m4a", ".m4a"), ("audio/m4a", ".m4a"),
        ("audio/aac", ".aac"), ("audio/ogg", ".ogg"), ("audio/opus", ".opus"), ("audio/flac", ".flac"),
        ("audio/wav", ".wav"), ("audio/x-wav", ".wav"), ("video/mp4", ".mp4"), ("video/x-m4v", ".m4v"),
        ("video/quicktime", ".mov"), ("video/webm", ".webm"), ("audio/webm", ".weba"),
        // Blanks anywhere, ASCII or not, are dropped before the lookup.
        (" audio/\tmpeg\r\n", ".mp3"), ("\u{A0}audio/mp4\u{2003}; codecs=mp4a", ".m4a"),
    ])
    func extensionFromMIMEType(_ mime: String, _ expected: String) {
        #expect(Naming.fileExtension(mimeType: mime, url: "https://x.example/file") == expected)
    }

    @Test func extensionFallsBackToTheURLPath() {
        #expect(Naming.fileExtension(mimeType: nil, url: "https://x.example/a/b.MP3?dest-id=171666") == ".mp3")
        #expect(Naming.fileExtension(mimeType: "application/octet-stream", url: "http://x.example/e.m4a#t=1") == ".m4a")
        #expect(Naming.fileExtension(mimeType: nil, url: "https://x.example/play?file=a.mp3") == "")
        #expect(Naming.fileExtension(mimeType: nil, url: "https://x.example/a.php") == "")
        #expect(Naming.fileExtension(mimeType: nil, url: "https://x.example.mp3") == "")
        #expect(Naming.fileExtension(mimeType: "image/jpeg", url: "https://x.example/cover.jpg") == "")
        #expect(
            Naming.fileExtension(mimeType: nil, url: "https://op3.dev/e,pg=abc/dts.podtrac.com/redirect.mp3/x/ep.ogg")
                == ".ogg")
        // The table wins over the URL.
        #expect(Naming.fileExtension(mimeType: "audio/mpeg", url: "https://x.example/a.ogg") == ".mp3")
    }

    // MARK: - Dates

    @Test func datePrefixIsUTC() {
        #expect(Naming.datePrefix(nil) == "")
        #expect(Naming.datePrefix(0) == "1970-01-01 ")
        #expect(Naming.datePrefix(1_303_887_600) == "2011-04-27 ")
        #expect(Naming.datePrefix(951_868_799) == "2000-02-29 ")
        #expect(Naming.datePrefix(-1) == "1969-12-31 ")
    }

    // MARK: - Collisions

    @Test func episodeNamesCombineDateTitleAndExtension() {
        let names = Naming.episodeNames([
            input("Ep / 1", 1_303_887_600), input("No date", nil, mime: nil, url: "https://x.example/n.ogg?x=1"),
        ])
        #expect(names == ["2011-04-27 Ep _ 1.mp3", "No date.ogg"])
    }

    @Test func collisionsGoToTheOldestEpisodeFirst() {
        let dated = Naming.episodeNames([input("Same", 300), input("Same", 200), input("Same", 100)])
        #expect(dated == ["1970-01-01 Same (3).mp3", "1970-01-01 Same (2).mp3", "1970-01-01 Same.mp3"])
        let sameDay = Naming.episodeNames([input("Same", 1_000), input("Same", 1_000), input("Same", 1_000)])
        // Same date: the bottom of the feed counts as oldest.
        #expect(sameDay == dated)
    }

    @Test func prependingANewEpisodeRenamesNothing() {
        let old = [input("News", 2_000), input("News", 1_000), input("Bonus", nil), input("Bonus", nil)]
        let before = Naming.episodeNames(old)
        #expect(before == ["1970-01-01 News (2).mp3", "1970-01-01 News.mp3", "Bonus (2).mp3", "Bonus.mp3"])
        let after = Naming.episodeNames([input("News", 3_000), input("Bonus", nil)] + old)
        #expect(Array(after.dropFirst(2)) == before)
        #expect(after[0] == "1970-01-01 News (3).mp3")
        #expect(after[1] == "Bonus (3).mp3")
    }

    @Test func canonicallyEquivalentTitlesGetOneSpellingAndASuffix() {
        // "é" precomposed and decomposed look the same: both are spelt
        // precomposed, and the newer episode gets the suffix.
        let names = Naming.episodeNames([input("Cafe\u{301}", 200), input("Caf\u{E9}", 100)])
        #expect(
            names.map { Array($0.utf8) }
                == [Array("1970-01-01 Caf\u{E9} (2).mp3".utf8), Array("1970-01-01 Caf\u{E9}.mp3".utf8)])
        let shows = Naming.directoryNames(["Caf\u{E9}", "Cafe\u{301}"])
        #expect(shows.map { Array($0.utf8) } == [Array("Caf\u{E9}".utf8), Array("Caf\u{E9} (2)".utf8)])
    }

    @Test func suffixedNameDoesNotCollideWithALiteralTitle() {
        let names = Naming.episodeNames([input("A (2)", nil), input("A", nil), input("A", nil)])
        #expect(Set(names.map { Array($0.utf8) }).count == 3)
    }

    @Test func directoryNamesAreSanitisedAndUniqueInInputOrder() {
        #expect(
            Naming.directoryNames(["Show", nil, "Show", "", " Show ", ".."])
                == ["Show", "untitled", "Show (2)", "untitled (2)", "Show (3)", "untitled (3)"])
    }
}
