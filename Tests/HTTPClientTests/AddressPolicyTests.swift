import HTTPClient
import Testing

/// The address-zone rule on literal URLs, without a socket: every notation
/// of a forbidden address is recognised, and each issuer reaches exactly
/// the zones DESIGN.md (guarantee 6) allows.
@Suite struct AddressPolicyTests {
    // MARK: - Helpers

    private let strict = AddressPolicy()
    private let fromPublic = URLIssuer.server(.global)

    private func zone(_ url: String) -> AddressZone? {
        switch strict.check(url: url, from: .user) {
        case .allowed(let zone): return zone
        default: return nil
        }
    }

    // MARK: - Notations

    @Test(arguments: [
        "http://127.0.0.1/a.mp3", "http://127.0.0.1./a.mp3", "http://2130706433/a.mp3", "http://0x7f000001/a.mp3",
        "http://0x7F000001/a.mp3", "http://0x7f.0.0.1/a.mp3", "http://0177.0.0.1/a.mp3", "http://0177.0.0.01/a.mp3",
        "http://127.1/a.mp3", "http://127.0.1/a.mp3", "http://0x7f.1/a.mp3", "http://017700000001/a.mp3",
        "http://127.255.255.254:8080/a.mp3", "http://[::1]/a.mp3", "http://[0:0:0:0:0:0:0:1]:80/a.mp3",
        "http://[::ffff:127.0.0.1]/a.mp3", "http://[::ffff:7f00:1]/a.mp3", "http://[::FFFF:7F00:0001]/a.mp3",
        "http://[::127.0.0.1]/a.mp3", "http://[::ffff:0:127.0.0.1]/a.mp3", "http://[64:ff9b::127.0.0.1]/a.mp3",
        "http://[64:ff9b::7f00:1]/a.mp3", "http://[2002:7f00:1::]/a.mp3", "http://user:pw@127.0.0.1/a.mp3",
        "http://x.example@127.0.0.1:81/a.mp3", "http://%31%32%37.0.0.1/a.mp3", "http://a%40b@127.0.0.1/a.mp3",
        "HTTP://127.1/a.mp3", "http://127.0.0.1.:80/a.mp3", "http://[::1%25lo]/a.mp3",
    ])
    func everyNotationOfLoopbackIsLoopback(_ url: String) {
        #expect(zone(url) == .loopback, "\(url)")
        guard case .refused(.loopback, let message) = strict.check(url: url, from: fromPublic) else {
            Issue.record("\(url) is not refused from a public feed")
            return
        }
        #expect(message.contains("allow_private"))
    }

    @Test(arguments: [
        ("http://10.0.0.1/", AddressZone.privateNetwork), ("http://10.255.255.255/", .privateNetwork),
        ("http://167772161/", .privateNetwork), ("http://0xa.0.0.1/", .privateNetwork), ("http://012.1/", .privateNetwork),
        ("http://172.16.0.1/", .privateNetwork), ("http://172.31.255.255/", .privateNetwork),
        ("http://192.168.1.1/", .privateNetwork), ("http://192.168.257/", .privateNetwork),
        ("http://100.64.0.1/", .privateNetwork), ("http://100.127.255.254/", .privateNetwork),
        ("http://[fc00::1]/", .privateNetwork), ("http://[fd12:3456::1]/", .privateNetwork),
        ("http://[fec0::1]/", .privateNetwork), ("http://[::ffff:10.1.2.3]/", .privateNetwork),
        ("http://[::ffff:c0a8:101]/", .privateNetwork), ("http://[64:ff9b:1::8.8.8.8]/", .privateNetwork),
        ("http://169.254.169.254/latest/meta-data/", .linkLocal), ("http://2852039166/", .linkLocal),
        ("http://0xa9.0xfe.0xa9.0xfe/", .linkLocal), ("http://[fe80::1]/", .linkLocal),
        ("http://[fe80::1%25eth0]/", .linkLocal), ("http://[febf::1]/", .linkLocal),
        ("http://[::ffff:169.254.169.254]/", .linkLocal),
        ("http://0.0.0.0/", .reserved), ("http://0/", .reserved), ("http://0x0/", .reserved), ("http://0.1.2.3/", .reserved),
        ("http://[::]/", .reserved), ("http://[::ffff:0.0.0.0]/", .reserved), ("http://224.0.0.1/", .reserved),
        ("http://239.255.255.250/", .reserved), ("http://255.255.255.255/", .reserved), ("http://240.0.0.1/", .reserved),
        ("http://192.0.2.1/", .reserved), ("http://198.51.100.7/", .reserved), ("http://203.0.113.9/", .reserved),
        ("http://198.18.0.1/", .reserved), ("http://[ff02::1]/", .reserved), ("http://[2001:db8::1]/", .reserved),
        ("http://[::ffff:224.0.0.1]/", .reserved),
        ("http://8.8.8.8/", .global), ("http://134744072/", .global), ("http://1.1.1.1:8443/x", .global),
        ("http://172.15.255.255/", .global), ("http://172.32.0.0/", .global), ("http://100.63.255.255/", .global),
        ("http://100.128.0.0/", .global), ("http://169.253.0.1/", .global), ("http://192.169.0.1/", .global),
        ("http://11.0.0.1/", .global), ("http://[2606:4700::1111]/", .global), ("http://[::ffff:8.8.8.8]/", .global),
        ("http://[64:ff9b::8.8.8.8]/", .global), ("http://[2002:808:808::]/", .global),
    ])
    func addressesFallInTheirZone(_ url: String, _ expected: AddressZone) {
        #expect(zone(url) == expected, "\(url)")
    }

    @Test(arguments: [
        "http://example.org/a.mp3", "http://localhost/a.mp3", "http://127.0.0.1.nip.io/a.mp3", "http://08.0.0.1/",
        "http://0x7g.0.0.1/", "http://1.2.3.4.5/", "http://256.0.0.1/", "http://1.2.3.256.example/",
        "http://127.0.0.-1/", "http://4294967296/", "http://1.2.65536/",
    ])
    func namesAreLeftToTheConnectTimeCheck(_ url: String) {
        #expect(strict.check(url: url, from: fromPublic) == .atConnect, "\(url)")
    }

    @Test func hostsAreFoundBehindUserInfoPortsAndBrackets() {
        #expect(AddressPolicy.host(of: "http://a:b@h.example:81/p?q#f") == "h.example")
        #expect(AddressPolicy.host(of: "https://[::1]:8443/x") == "[::1]")
        #expect(AddressPolicy.host(of: "http://h.example") == "h.example")
        #expect(AddressPolicy.host(of: "http://") == nil)
        #expect(strict.check(url: "http://", from: fromPublic) == .unparsable)
    }

    // MARK: - The host libcurl connects to

    /// libcurl ends userinfo at the first `@`; a second `@` leaves a host
    /// it refuses, so it connects nowhere, and the URL is not judged by
    /// what follows the last `@` (here a private address).
    @Test(arguments: [
        "http://a@127.0.0.1@10.0.0.1/", "http://a:p@ss@10.0.0.1/a.mp3", "http://a@127.0.0.1:x@10.0.0.1/",
        "http://+127.0.0.1/", "http://ex ample/",
    ])
    func hostsLibcurlRefusesAreUnparsable(_ url: String) {
        #expect(AddressPolicy.host(of: url) == nil, "\(url)")
        #expect(strict.check(url: url, from: fromPublic) == .unparsable, "\(url)")
        #expect(strict.check(url: url, from: .user) == .unparsable, "\(url)")
    }

    /// What a browser reads as the end of the authority, libcurl reads as
    /// userinfo: `127.0.0.1\` is a user name, the host is the name after
    /// the `@`, and the connect-time check judges where it resolves to.
    @Test func aBackslashBeforeAnAtIsUserInfoToLibcurl() {
        #expect(AddressPolicy.host(of: "http://127.0.0.1\\@x.example/a.mp3") == "x.example")
        #expect(strict.check(url: "http://127.0.0.1\\@x.example/a.mp3", from: fromPublic) == .atConnect)
        #expect(AddressPolicy.host(of: "http:///x.example/a") == "x.example")
        #expect(AddressPolicy.host(of: "x.example/a") == "x.example")
    }

    @Test func onlyNumericAddressesAreAddresses() {
        for text in ["[1::2::3]", "[12345::]", "[::g]", "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7]", "[::1.2.3]", "[::+1]",
            "127.1", "0x7f000001", "2130706433", "0177.0.0.1", "127.0.0.1.", " 127.0.0.1", "[127.0.0.1]", "example.org",
            "", "::ffff:127.0.0.1:80"]
        {
            #expect(IPAddress(numeric: text) == nil, "\(text)")
        }
        #expect(IPAddress(numeric: "[1:2:3:4:5:6:1.2.3.4]") != nil)
        #expect(IPAddress(numeric: "1:2:3:4:5:6:7::") != nil)
        #expect(IPAddress(numeric: "fe80::1%eth0") == IPAddress(numeric: "fe80::1"))
    }

    // MARK: - The rule

    @Test func eachIssuerReachesExactlyTheZonesTheDesignAllows() {
        let zones = AddressZone.allCases
        func reachable(_ issuer: URLIssuer) -> Set<AddressZone> {
            Set(zones.filter { strict.allows($0, from: issuer) })
        }
        #expect(reachable(.user) == Set(zones))
        #expect(reachable(.server(.global)) == [.global])
        #expect(reachable(.server(.privateNetwork)) == [.global, .privateNetwork])
        #expect(reachable(.server(.linkLocal)) == [.global, .linkLocal])
        #expect(reachable(.server(.loopback)) == [.global, .privateNetwork, .linkLocal, .loopback])
        #expect(reachable(.server(.reserved)) == [.global])
        let open = AddressPolicy(allowPrivate: true)
        for issuer in [URLIssuer.user] + zones.map(URLIssuer.server) {
            #expect(zones.allSatisfy { open.allows($0, from: issuer) })
        }
    }

    @Test func theRuleIsTransitiveSoRedirectChainsCannotLaunder() {
        // Judging each hop by its issuer is only sound when a chain of
        // allowed hops never reaches what a direct hop could not.
        let issuers = AddressZone.allCases
        for a in issuers {
            for b in issuers where strict.allows(b, from: .server(a)) {
                for c in issuers where strict.allows(c, from: .server(b)) {
                    #expect(strict.allows(c, from: .server(a)), "\(a) -> \(b) -> \(c)")
                }
            }
        }
    }

    @Test func refusalsSayWhatWasRefusedAndWhatIsAllowed() {
        guard case .refused(_, let message) = strict.check(url: "http://2130706433/", from: .server(.privateNetwork)) else {
            Issue.record("not refused")
            return
        }
        #expect(message.contains("127.0.0.1, a loopback address"), "\(message)")
        #expect(message.contains("from a server at a private address"), "\(message)")
        #expect(message.contains("lead to public and private addresses"), "\(message)")
        #expect(message.contains("-o allow_private"), "\(message)")
    }

    @Test func literalChecksFollowTheRule() {
        #expect(strict.check(url: "http://10.1.2.3/a", from: .server(.privateNetwork)) == .allowed(.privateNetwork))
        #expect(strict.check(url: "http://8.8.8.8/a", from: .server(.privateNetwork)) == .allowed(.global))
        if case .refused(.loopback, _) = strict.check(url: "http://127.1/a", from: .server(.privateNetwork)) {
        } else {
            Issue.record("a private feed reaches loopback")
        }
        if case .refused(.linkLocal, _) = strict.check(url: "http://169.254.169.254/", from: .server(.privateNetwork)) {
        } else {
            Issue.record("a private feed reaches the metadata service")
        }
        #expect(strict.check(url: "http://127.0.0.1/a", from: .server(.loopback)) == .allowed(.loopback))
        #expect(strict.check(url: "http://127.0.0.1/a", from: .user) == .allowed(.loopback))
        let open = AddressPolicy(allowPrivate: true)
        #expect(open.check(url: "http://0x7f000001/a", from: fromPublic) == .allowed(.loopback))
    }

    @Test func aTestOnlyOverrideTreatsOneAddressAsPublic() throws {
        let address = try #require(IPAddress(numeric: "10.23.0.2"))
        let policy = AddressPolicy(treatedAsPublic: [address])
        #expect(policy.zone(of: address) == .global)
        #expect(policy.zone(of: try #require(IPAddress(numeric: "10.23.0.1"))) == .privateNetwork)
        #expect(policy.check(url: "http://10.23.0.2:8080/", from: fromPublic) == .allowed(.global))
    }

    @Test func socketBytesAndTextAgree() throws {
        #expect(IPAddress(bytes: [127, 0, 0, 1]) == IPAddress(numeric: "127.0.0.1"))
        #expect(AddressPolicy.host(of: "http://2130706433/") == "127.0.0.1")
        let mapped = try #require(IPAddress(bytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1]))
        #expect(mapped == IPAddress(numeric: "::ffff:127.0.0.1"))
        #expect(AddressZone(mapped) == .loopback)
        let normalised = try #require(AddressPolicy.host(of: "http://0x7f.1/"))
        #expect("\(try #require(IPAddress(numeric: normalised)))" == "127.0.0.1")
        #expect("\(try #require(IPAddress(numeric: "::1")))" == "::1")
        #expect("\(try #require(IPAddress(numeric: "[::ffff:7f00:1]")))" == "::ffff:127.0.0.1")
        #expect("\(try #require(IPAddress(numeric: "2001:db8:0:0:1:0:0:1")))" == "2001:db8::1:0:0:1")
        #expect("\(try #require(IPAddress(numeric: "fe80::1%25eth0")))" == "fe80::1")
        #expect("\(try #require(IPAddress(numeric: "1:2:3:4:5:6:7:8")))" == "1:2:3:4:5:6:7:8")
        #expect("\(try #require(IPAddress(numeric: "::")))" == "::")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
    }
}
