import Feeds
import Glibc
import Testing

/// Documents written to attack the parser: entity expansion, external
/// entities and DTDs, XInclude. None may reach the network or the file
/// system, and none may expand anything.
@Suite struct FeedSafetyTests {
    // MARK: - Fixtures

    /// Classic "billion laughs": ten levels of ten references, 3 GB if
    /// expanded.
    static let billionLaughs = """
        <?xml version="1.0"?>
        <!DOCTYPE rss [
          <!ENTITY lol "lol">
          <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
          <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
          <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
          <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
          <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
          <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
          <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
          <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
        ]>
        <rss><channel><title>&lol9;</title>
        <item><title>&lol9;</title><enclosure url="http://x.example/&lol9;.mp3"/></item></channel></rss>
        """

    /// "Quadratic blowup": one 64 KB entity referenced 40,000 times (2.6 GB).
    static let quadraticBlowup: String = {
        let big = String(repeating: "A", count: 65_536)
        let references = String(repeating: "&big;", count: 40_000)
        return """
            <?xml version="1.0"?>
            <!DOCTYPE rss [<!ENTITY big "\(big)">]>
            <rss><channel><title>\(references)</title></channel></rss>
            """
    }()

    // MARK: - Entities

    @Test func rejectsDocumentsThatDeclareEntities() throws {
        #expect(throws: FeedError.self) { try Fixtures.parse(Self.billionLaughs) }
        #expect(throws: FeedError.self) { try Fixtures.parse(Self.quadraticBlowup) }
        let external = """
            <!DOCTYPE rss [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
            <rss><channel><title>&xxe;</title></channel></rss>
            """
        #expect(throws: FeedError.self) { try Fixtures.parse(external) }
        let parameter = """
            <!DOCTYPE rss [ <!ENTITY % p "<!ENTITY x 'y'>"> %p; ]>
            <rss><channel><title>&x;</title></channel></rss>
            """
        #expect(throws: FeedError.self) { try Fixtures.parse(parameter) }
        let unparsed = """
            <!DOCTYPE rss [ <!NOTATION n SYSTEM "n"> <!ENTITY u SYSTEM "file:///etc/passwd" NDATA n> ]>
            <rss><channel><title>T</title></channel></rss>
            """
        #expect(throws: FeedError.self) { try Fixtures.parse(unparsed) }
        do {
            _ = try Fixtures.parse(Self.billionLaughs)
        } catch {
            #expect(error.message.contains("entities"))
        }
    }

    @Test func rejectsEntityDeclarationsTheByteScanCannotSee() throws {
        // In UTF-16 the `<!ENTITY` scan sees nothing; the SAX hook stops the
        // parse at the first declaration, before any reference.
        let body = Self.billionLaughs.replacingOccurrences("<?xml version=\"1.0\"?>", "")
        #expect(throws: FeedError.self) { try Fixtures.parse(Fixtures.utf16LittleEndian(body)) }
        #expect(throws: FeedError.self) { try Fixtures.parse(Fixtures.utf16BigEndian(body)) }
        // Behind a malformed prologue, so the strict parse fails first and
        // the recovering parse meets the declaration.
        let malformed = "<!-- a -- b -->" + body
        #expect(throws: FeedError.self) { try Fixtures.parse(Fixtures.utf16LittleEndian(malformed)) }
        #expect(throws: FeedError.self) { try Fixtures.parse(malformed) }
    }

    @Test func neverReadsLocalFilesThroughEntitiesOrXInclude() throws {
        let xinclude = """
            <rss xmlns:xi="http://www.w3.org/2001/XInclude"><channel>
            <title>T<xi:include href="file:///etc/passwd" parse="text"/></title>
            <item><title>E<xi:include href="/etc/hostname" parse="text"/></title>
            <enclosure url="http://x.example/a.mp3"/></item></channel></rss>
            """
        let feed = try Fixtures.parse(xinclude)
        #expect(feed.title == "T")
        #expect(feed.episodes.map(\.title) == ["E"])
    }

    // MARK: - Network

    @Test func theLoopbackListenerSeesAConnection() throws {
        // The check the tests below rely on: a real connection is counted.
        let listener = try LoopbackListener()
        let port = UInt16(listener.baseURL.split(separator: ":").last.map(String.init) ?? "") ?? 0
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        #expect(connected)
        #expect(listener.connectionCount() == 1)
    }

    @Test func fetchesNothingADocumentPointsAt() throws {
        let listener = try LoopbackListener()
        let url = listener.baseURL
        let documents = [
            // An external DTD: not loaded (no DTDLOAD, NONET).
            """
            <!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "\(url)/rss-0.91.dtd">
            <rss><channel><title>T</title></channel></rss>
            """,
            "<!DOCTYPE rss SYSTEM \"\(url)/system.dtd\"><rss><channel><title>T</title></channel></rss>",
            // External general and parameter entities: rejected.
            "<!DOCTYPE rss [<!ENTITY e SYSTEM \"\(url)/e.xml\">]><rss><channel><title>&e;</title></channel></rss>",
            "<!DOCTYPE rss [<!ENTITY % p SYSTEM \"\(url)/p.dtd\"> %p;]><rss><channel><title>T</title></channel></rss>",
            // XInclude and a stylesheet: never processed.
            """
            <?xml-stylesheet type="text/xsl" href="\(url)/style.xsl"?>
            <rss xmlns:xi="http://www.w3.org/2001/XInclude"><channel><title>T</title>
            <xi:include href="\(url)/include.xml"/></channel></rss>
            """,
            // The same DTD behind a malformed body, for the recovering parse.
            "<!DOCTYPE rss SYSTEM \"\(url)/system.dtd\"><rss><channel><title>T & U</title></channel></rss>",
        ]
        for document in documents {
            _ = try? Fixtures.parse(document)
            _ = try? Fixtures.parse(Fixtures.utf16LittleEndian(document))
            _ = try? SourceList.parse(Array(document.replacingOccurrences("rss", "opml").utf8))
        }
        #expect(listener.connectionCount() == 0)
    }

    @Test func readsUndefinedHTMLEntitiesWhenAnExternalDTDIsNotLoaded() throws {
        // RSS 0.91 feeds lean on their DTD for `&eacute;`; libxml2 keeps the
        // reference, and podfs gives it its HTML meaning (or shows it as
        // written) instead of dropping the text.
        let feed = try Fixtures.parse(
            """
            <!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
              "http://my.netscape.com/publish/formats/rss-0.91.dtd">
            <rss version="0.91"><channel><title>Caf&eacute; &amp; &madeup; &hellip;</title>
            <item><title>Ep</title><enclosure url="http://x.example/a.mp3"/></item></channel></rss>
            """)
        #expect(feed.title == "Café & &madeup; …")
        #expect(feed.warnings.isEmpty)
    }
}
