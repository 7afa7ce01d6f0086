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
        // Zero-width joiners are removed like every zero-width character.
        #expect(Naming.sanitize("👩\u{200D}👧") == "👩👧")
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

    @Test func collisionsCompareBytesNotCanonicalEquivalence() {
        // "é" precomposed and decomposed are different file names on Linux.
        let names = Naming.episodeNames([input("Caf\u{E9}", nil), input("Cafe\u{301}", nil)])
        #expect(names == ["Caf\u{E9}.mp3", "Cafe\u{301}.mp3"])
        #expect(Array(names[0].utf8) != Array(names[1].utf8))
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
