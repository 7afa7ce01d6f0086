import Feeds
import Testing
import TestSupport

/// Editing SOURCE files: plain URL lists and OPML, changed in place.
@Suite struct SubscriptionFileTests {
    // MARK: - Fixtures

    /// Plain lists with comments, blank lines, CR LF, a BOM, padding and
    /// subscription schemes.
    static let lists: [String] = [
        "",
        "# nothing yet\n",
        "https://a.example/feed.xml\n",
        "https://a.example/feed.xml",
        "# podcasts\nhttps://a.example/feed.xml\n\n  http://b.example/rss  \n#https://c.example/out\n",
        "https://a.example/feed.xml\r\n# comment\r\nfeed://b.example/x\r\n",
        "\u{FEFF}https://a.example/feed.xml\nitpc://b.example/y?x=1&y=2\n",
        "\n\n\thttps://a.example/feed.xml\t\n# end",
    ]

    /// OPML documents a careless scanner would misread.
    static let documents: [String] = [
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- exported <outline xmlUrl="https://a.example/feed.xml"/> -->
        <opml version="2.0">
          <head><title><![CDATA[ <outline xmlUrl="https://cdata.example/x"/> ]]></title></head>
          <body>
            <outline type="rss" text="A > B" title='a "quoted" title' xmlUrl="https://a.example/feed.xml"/>
            <outline text="Folder">
              <outline text="C&amp;D" XMLURL='https://c.example/f?x=1&amp;y=2'></outline>
              <outline text="E" xmlurl="itpc://e.example/rss"
                       type="rss"/>
            </outline>
            <?podfs note <outline xmlUrl="https://pi.example/"/> ?>
          </body>
        </opml>

        """,
        "\u{FEFF}<opml version=\"1.0\">\r\n\t<body>\r\n\t\t<outline xmlUrl=\"https://a.example/feed.xml\"/>\r\n"
            + "\t\t<outline xmlUrl=\"https://b.example/feed.xml\"/>\r\n\t</body>\r\n</opml>",
        "<opml><body><outline xmlUrl=\"https://a.example/1\"/><outline xmlUrl=\"https://b.example/2\"/></body></opml>",
        """
        <?xml version="1.0"?>
        <!DOCTYPE opml>
        <opml version="2.0"><head/>
        <body>
        </body>
        </opml>
        """,
        """
        <?xml version="1.0" encoding="ISO-8859-1"?>
        <opml version="2.0"><body>
          <outline text="x" xmlUrl="https://a.example/feed.xml" /><outline text="y" xmlUrl="https://b.example/f"/>
        </body></opml>
        """,
    ]

    /// URLs to add, as a user types them.
    static let newURLs: [(url: String, title: String?)] = [
        ("https://new.example/feed.xml", "New"),
        ("feed://new.example/other", nil),
        ("https://new.example/f?a=1&b=\"2\"", "Tom & Jerry <\"quoted\"> \u{1}\u{7} ünï 🎧\ttab"),
        ("https://new.example/ä ö", "]]> -->"),
    ]

    // MARK: - Property tests

    @Test(arguments: lists + documents)
    func removingEachURLLeavesExactlyTheOthers(text: String) throws {
        let original = try SubscriptionFile(bytes: Array(text.utf8))
        for url in original.urls {
            var file = original
            #expect(file.remove(url: url) == true, "\(url) in \(text)")
            let expected = original.urls.filter { $0 != url }
            #expect(file.urls == expected)
            #expect(try SubscriptionFile(bytes: file.bytes).urls == expected)
            #expect(try SourceList.parse(file.bytes) == expected)
            #expect(file.isOPML == original.isOPML)
            #expect(file.remove(url: url) == false)
        }
    }

    @Test(arguments: lists + documents)
    func addingAURLAppendsItAndRemovingItRestoresTheText(text: String) throws {
        let original = try SubscriptionFile(bytes: Array(text.utf8))
        for (url, title) in Self.newURLs {
            var file = original
            #expect(file.add(url: url, title: title) == true, "\(url) in \(text)")
            let typed = url.replacingOccurrences("feed:", "http:")
            let expected = original.urls + [try #require(FeedURL.resolveHTTP(typed, base: ""))]
            #expect(file.urls == expected)
            #expect(try SubscriptionFile(bytes: file.bytes).urls == expected)
            #expect(file.add(url: url, title: "again") == false)
            #expect(file.remove(url: url) == true)
            let endsOpen = !original.isOPML && !text.isEmpty && text.utf8.last != 0x0A
            #expect(file.bytes == (endsOpen ? Array((text + "\n").utf8) : original.bytes))
        }
    }

    /// One feed in another spelling (scheme or host in capitals, a default
    /// port, an empty query, a fragment) is listed already: a second
    /// subscription would be a second show of it.
    @Test func aFeedListedInAnotherSpellingIsListedAlready() throws {
        var file = try SubscriptionFile(bytes: Array("http://localhost:8080/c.xml # C\nhttps://a.example/Feed\n".utf8))
        for spelling in [
            "HTTP://localhost:8080/c.xml", "http://LOCALHOST:8080/c.xml", "http://LocalHost:8080/c.xml?",
            "http://localhost:8080/c.xml#new",
        ] {
            #expect(file.listed(spelling) == "http://localhost:8080/c.xml", "\(spelling)")
            let added = file.add(url: spelling, title: nil)
            #expect(!added, "\(spelling)")
        }
        #expect(file.listed("https://A.EXAMPLE:443/Feed") == "https://a.example/Feed")
        #expect(file.listed("https://a.example/feed") == nil, "a path's case counts")
        #expect(file.listed("http://localhost:8081/c.xml") == nil)
        let added = file.add(url: "https://a.example/feed", title: nil)
        #expect(added && file.urls.count == 3)
        // A list that holds one feed twice (written by hand, or by an
        // earlier podfs) loses both spellings to one removal.
        var twice = try SubscriptionFile(bytes: Array("http://Host.example/f\nhttps://b.example/x\nhttp://host.example/f\n".utf8))
        let removed = twice.remove(url: "HTTP://HOST.EXAMPLE/f")
        #expect(removed && twice.urls == ["https://b.example/x"], "\(twice.urls)")
    }

    @Test func feedIdentityKeepsWhatServersTellApart() {
        #expect(SourceList.feedIdentity("HTTPS://User:Pw@Host.Example:443/a/B?q=1#x") == "https://User:Pw@host.example/a/B?q=1")
        #expect(SourceList.feedIdentity("http://h.example:8080") == "http://h.example:8080/")
        #expect(SourceList.feedIdentity("http://h.example:443/x") == "http://h.example:443/x", "another scheme's port")
        #expect(SourceList.feedIdentity("http://h.example/x?") == SourceList.feedIdentity("http://h.example/x"))
        #expect(SourceList.feedIdentity("http://h.example:/x") == "http://h.example/x", "an empty port")
        #expect(SourceList.feedIdentity("http://h.example/a%2fb%7ec?q=%e2%82%ac") == "http://h.example/a%2Fb~c?q=%E2%82%AC")
        #expect(SourceList.feedIdentity("http://h.example/100%") == "http://h.example/100%", "a stray % is kept")
        #expect(SourceList.feedIdentity("http://h.example/a%2Fb") != SourceList.feedIdentity("http://h.example/a/b"))
        #expect(SourceList.feedIdentity("http://h.example/x?a") != SourceList.feedIdentity("http://h.example/x?A"))
    }

    @Test func editsEveryRandomDocumentMadeOfHostileFragments() throws {
        let fragments = [
            "<outline text=\"A\" xmlUrl=\"https://a.example/1\"/>",
            "<outline XMLURL='https://b.example/2?x=1&amp;y=2'></outline>",
            "<!-- <outline xmlUrl=\"https://c.example/3\"/> -->",
            "<![CDATA[<outline xmlUrl=\"https://d.example/4\"/>]]>",
            "<outline text=\"a > b\" xmlUrl=\"feed://e.example/5\"\r\n  />",
            "<outline text=\"F\"><outline xmlUrl=\"https://f.example/6\"/></outline>",
            "<?pi <outline xmlUrl=\"https://g.example/7\"/> ?>",
            "<outline text='&lt;\"&gt;' xmlurl = ' https://h.example/8 ' />",
            "\n", "\r\n", "  ", "\t",
        ]
        var generator = SeededGenerator(state: 0x0B5E55ED)
        for _ in 0..<300 {
            var text = generator.next() % 2 == 0 ? "\u{FEFF}" : ""
            text += generator.next() % 2 == 0 ? "<?xml version=\"1.0\"?>\n" : ""
            text += "<opml version=\"2.0\"><body>"
            for _ in 0..<(generator.next() % 12) {
                text += fragments[Int(generator.next() % UInt64(fragments.count))]
            }
            text += "</body></opml>" + (generator.next() % 2 == 0 ? "\n" : "")
            let original = try SubscriptionFile(bytes: Array(text.utf8))
            for url in original.urls {
                var file = original
                #expect(file.remove(url: url) == true, "\(url) in \(text)")
                #expect(try SourceList.parse(file.bytes) == original.urls.filter { $0 != url })
            }
            var file = original
            #expect(file.add(url: "https://new.example/f", title: "New") == true, "\(text)")
            #expect(file.remove(url: "https://new.example/f") == true)
            #expect(file.bytes == original.bytes)
        }
    }

    // MARK: - Plain lists

    @Test func removingFromAListKeepsEveryOtherLineByteForByte() throws {
        let text =
            "# mine\r\nhttps://a.example/f\r\n\r\n  feed://b.example/x  \r\n"
            + "https://c.example/f\r\n# http://b.example/x\r\n"
        var file = try SubscriptionFile(bytes: Array(text.utf8))
        #expect(file.remove(url: "http://b.example/x") == true)
        #expect(file.bytes == Array(text.replacingOccurrences("  feed://b.example/x  \r\n", "").utf8))
    }

    @Test func removingFromAListDropsEveryLineOfTheSameFeed() throws {
        let text = "https://a.example/f\nitpc://b.example/f\n feed://b.example/f\nhttps://c.example/f"
        var file = try SubscriptionFile(bytes: Array(text.utf8))
        #expect(file.remove(url: "https://b.example/f") == false)  // https is another feed
        #expect(file.remove(url: "pcast://b.example/f") == true)
        #expect(file.bytes == Array("https://a.example/f\nhttps://c.example/f".utf8))
        #expect(file.remove(url: "https://c.example/f") == true)
        #expect(file.bytes == Array("https://a.example/f\n".utf8))
        // A line with a comment after its URL lists that URL.
        var commented = try SubscriptionFile(bytes: Array("https://a.example/f # mine\nhttps://d.example/f\n".utf8))
        #expect(commented.remove(url: "https://a.example/f") == true)
        #expect(commented.bytes == Array("https://d.example/f\n".utf8))
    }

    @Test func addingToAListKeepsItsLineEnds() throws {
        var crlf = try SubscriptionFile(bytes: Array("https://a.example/f\r\nhttps://b.example/f".utf8))
        #expect(crlf.add(url: " feed://c.example/f ", title: nil) == true)
        #expect(crlf.bytes == Array("https://a.example/f\r\nhttps://b.example/f\r\nhttp://c.example/f\r\n".utf8))
        var empty = try SubscriptionFile(bytes: [])
        #expect(!empty.isOPML)
        #expect(empty.add(url: "https://a.example/f", title: nil) == true)
        #expect(empty.bytes == Array("https://a.example/f\n".utf8))
        var bom = try SubscriptionFile(bytes: [0xEF, 0xBB, 0xBF])
        #expect(bom.add(url: "https://a.example/f", title: nil) == true)
        #expect(bom.bytes == [0xEF, 0xBB, 0xBF] + Array("https://a.example/f\n".utf8))
    }

    /// A list's new line carries the show's title as a comment, on one
    /// line whatever the title holds; the URL reads as before and the
    /// title reads back.
    @Test func aListsNewLineNamesItsShow() throws {
        var file = try SubscriptionFile(bytes: Array("https://a.example/f # mine\n".utf8))
        #expect(file.add(url: "https://b.example/f", title: " Tom\n& #1\r\tJerry ") == true)
        #expect(file.bytes == Array("https://a.example/f # mine\nhttps://b.example/f # Tom & #1 Jerry\n".utf8))
        #expect(file.urls == ["https://a.example/f", "https://b.example/f"])
        #expect(file.titles == ["https://a.example/f": "mine", "https://b.example/f": "Tom & #1 Jerry"])
        #expect(file.add(url: "https://c.example/f", title: " \n ") == true)
        #expect(file.bytes.suffix(20) == Array("https://c.example/f\n".utf8).suffix(20))
        #expect(file.titles["https://c.example/f"] == nil)
        #expect(file.remove(url: "https://b.example/f") == true)
        #expect(file.urls == ["https://a.example/f", "https://c.example/f"])
    }

    @Test func anOPMLOutlineNamesItsShow() throws {
        let opml = """
            <opml version="2.0"><body>
            <outline text="Text only" xmlUrl="https://a.example/f"/>
            <outline text="ignored" title="Titled" xmlUrl="https://b.example/f"/>
            <outline text="https://c.example/f" xmlUrl="https://c.example/f"/>
            </body></opml>
            """
        var file = try SubscriptionFile(bytes: Array(opml.utf8))
        #expect(file.titles == ["https://a.example/f": "Text only", "https://b.example/f": "Titled"])
        #expect(file.add(url: "https://d.example/f", title: "Added") == true)
        #expect(file.titles["https://d.example/f"] == "Added")
    }

    @Test func refusesURLsThatAreNotFeedURLsOrAreAlreadyListed() throws {
        var file = try SubscriptionFile(bytes: Array("https://a.example/f\n".utf8))
        #expect(file.add(url: "mailto:a@example.org", title: nil) == false)
        #expect(file.add(url: "not a url", title: nil) == false)
        #expect(file.add(url: "  HTTPS://a.example/f ", title: nil) == false)
        #expect(file.remove(url: "https://z.example/f") == false)
        #expect(file.remove(url: "") == false)
        #expect(file.bytes == Array("https://a.example/f\n".utf8))
    }

    // MARK: - OPML

    @Test func removingAnOutlineKeepsCommentsDeclarationsAndOtherOutlines() throws {
        let text = Self.documents[0]
        var file = try SubscriptionFile(bytes: Array(text.utf8))
        #expect(file.isOPML)
        #expect(file.remove(url: "https://a.example/feed.xml") == true)
        let removedLine =
            "    <outline type=\"rss\" text=\"A > B\" title='a \"quoted\" title' "
            + "xmlUrl=\"https://a.example/feed.xml\"/>\n"
        #expect(file.bytes == Array(text.replacingOccurrences(removedLine, "").utf8))
        #expect(file.remove(url: "https://c.example/f?x=1&y=2") == true)
        #expect(file.remove(url: "http://e.example/rss") == true)
        let folder = "    <outline text=\"Folder\">\n    </outline>\n    <?podfs"
        #expect(String(decoding: file.bytes, as: UTF8.self).contains(folder))
        #expect(file.urls.isEmpty)
    }

    @Test func removingOneOfTwoOutlinesOnALineKeepsTheLine() throws {
        var file = try SubscriptionFile(bytes: Array(Self.documents[4].utf8))
        #expect(file.remove(url: "https://b.example/f") == true)
        let removed = "<outline text=\"y\" xmlUrl=\"https://b.example/f\"/>"
        #expect(file.bytes == Array(Self.documents[4].replacingOccurrences(removed, "").utf8))
    }

    @Test func refusesToRemoveAnOutlineThatHoldsOthers() throws {
        let text = """
            <opml><body>
            <outline text="Folder" xmlUrl="https://folder.example/f"><outline xmlUrl="https://a.example/f"/></outline>
            </body></opml>
            """
        var file = try SubscriptionFile(bytes: Array(text.utf8))
        #expect(file.remove(url: "https://folder.example/f") == false)
        #expect(file.bytes == Array(text.utf8))
        #expect(file.remove(url: "https://a.example/f") == true)
    }

    @Test func addsAnOutlineOnItsOwnLineIndentedLikeItsSiblings() throws {
        var file = try SubscriptionFile(bytes: Array(Self.documents[1].utf8))
        #expect(file.add(url: "https://new.example/f?a=1&b=2", title: "Tom & \"Jerry\"") == true)
        let line =
            "\t\t<outline type=\"rss\" text=\"Tom &amp; &quot;Jerry&quot;\" title=\"Tom &amp; &quot;Jerry&quot;\" "
            + "xmlUrl=\"https://new.example/f?a=1&amp;b=2\"/>\r\n"
        #expect(file.bytes == Array(Self.documents[1].replacingOccurrences("\t</body>", line + "\t</body>").utf8))
    }

    @Test func addsAnOutlineInAnEmptyBodyAndInline() throws {
        var empty = try SubscriptionFile(bytes: Array(Self.documents[3].utf8))
        #expect(empty.add(url: "https://a.example/f", title: nil) == true)
        let added = "  <outline type=\"rss\" text=\"https://a.example/f\" xmlUrl=\"https://a.example/f\"/>\n</body>"
        #expect(empty.bytes == Array(Self.documents[3].replacingOccurrences("</body>", added).utf8))
        var inline = try SubscriptionFile(bytes: Array(Self.documents[2].utf8))
        #expect(inline.add(url: "https://c.example/3", title: "C") == true)
        let inserted = "<outline type=\"rss\" text=\"C\" title=\"C\" xmlUrl=\"https://c.example/3\"/>"
        #expect(inline.bytes == Array(Self.documents[2].replacingOccurrences("</body>", inserted + "</body>").utf8))
    }

    @Test func writesNonASCIITitlesAsReferencesInALegacyEncoding() throws {
        var file = try SubscriptionFile(bytes: Array(Self.documents[4].utf8))
        #expect(file.add(url: "https://c.example/f", title: "Ünï 🎧") == true)
        #expect(String(decoding: file.bytes, as: UTF8.self).contains("text=\"&#xDC;n&#xEF; &#x1F3A7;\""))
        #expect(file.bytes.allSatisfy { $0 < 0x80 })
    }

    @Test func refusesToAddWithoutABodyEndTag() throws {
        let text = "<opml version=\"2.0\"><head/><body/></opml>"
        var file = try SubscriptionFile(bytes: Array(text.utf8))
        #expect(file.add(url: "https://a.example/f", title: "A") == false)
        #expect(file.bytes == Array(text.utf8))
    }

    @Test func refusesToEditUTF16Documents() throws {
        let text =
            "<?xml version=\"1.0\" encoding=\"UTF-16\"?>"
            + "<opml><body><outline xmlUrl=\"https://a.example/f\"/></body></opml>"
        var file = try SubscriptionFile(bytes: Fixtures.utf16LittleEndian(text))
        #expect(file.urls == ["https://a.example/f"])
        #expect(file.remove(url: "https://a.example/f") == false)
        #expect(file.add(url: "https://b.example/f", title: nil) == false)
    }

    @Test func throwsForFilesSourceListRejects() {
        #expect(throws: FeedError.self) { try SubscriptionFile(bytes: Array("https://a.example/f\nnot a url\n".utf8)) }
        #expect(throws: FeedError.self) { try SubscriptionFile(bytes: Array("<rss/>".utf8)) }
    }
}
