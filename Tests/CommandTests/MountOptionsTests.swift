import HTTPClient
import Testing

@testable import podfs

/// `-o` lists as fstab and the command line write them.
@Suite struct MountOptionsTests {
    @Test func aProxyIsTakenOnlyWhenAskedFor() throws {
        #expect(try MountOptions(["allow_other"]).proxy == nil)
        let options = try MountOptions(["proxy=http://user:secret@127.0.0.1:3128"])
        #expect(options.proxy?.url == "http://user:secret@127.0.0.1:3128")
        #expect(options.proxy?.shown == "http://127.0.0.1:3128")
        #expect(try MountOptions(["proxy=socks5h://[::1]:1080"]).proxy?.host == "[::1]")
    }

    @Test func theUserAgentNamesPodfsUnlessReplaced() throws {
        #expect(PodfsVersion.userAgent.hasPrefix("podfs/\(PodfsVersion.number) "))
        #expect(try MountOptions(["allow_other"]).userAgent == nil)
        #expect(try MountOptions(["user_agent=MyPlayer/2.0 (Linux)"]).userAgent == "MyPlayer/2.0 (Linux)")
        #expect(try MountOptions(["user_agent=A\\,B"]).userAgent == "A,B")
    }

    @Test(arguments: ["user_agent", "user_agent=", "user_agent=a\r\nX-Evil: 1", "user_agent=tab\there"])
    func aUserAgentThatCouldBreakTheHeaderIsRefused(_ option: String) {
        #expect(throws: (any Error).self, "\(option.debugDescription)") { try MountOptions([option]) }
    }

    @Test(arguments: ["proxy", "proxy=", "proxy=ftp://p.example", "proxy=p.example:3128", "proxy=http://",
        "proxy=http://a@b@c/", "proxy=http://p .example"])
    func aProxyThatIsNotAProxyURLIsRefused(_ option: String) {
        #expect(throws: (any Error).self, "\(option)") { try MountOptions([option]) }
    }
}

/// `\,` and `\\` in `-o` values, as libfuse's option parser reads them.
@Suite struct MountOptionEscapeTests {
    @Test(arguments: [
        ("a,b=c", ["a", "b=c"]), ("cache_dir=/srv/a\\,b,allow_other", ["cache_dir=/srv/a,b", "allow_other"]),
        ("cache_dir=/srv/a\\\\,allow_other", ["cache_dir=/srv/a\\", "allow_other"]),
        ("cache_dir=/srv/a\\\\\\,b", ["cache_dir=/srv/a\\,b"]), ("x=\\q", ["x=q"]), ("x=end\\", ["x=end\\"]),
        ("", [""]), (",", ["", ""]), ("\\,", [","]),
    ])
    func listsSplitAtUnescapedCommas(_ list: String, _ expected: [String]) {
        #expect(MountOptions.split(list) == expected, "\(list)")
    }

    @Test func aCacheDirectoryMayHoldACommaAndABackslash() throws {
        #expect(try MountOptions(["cache_dir=/srv/pod\\,casts,allow_private"]).cacheDirectory == "/srv/pod,casts")
        #expect(try MountOptions(["cache_dir=/srv/a\\\\b"]).cacheDirectory == "/srv/a\\b")
        #expect(try MountOptions(["cache_dir=/srv/pod\\,casts,allow_private"]).allowPrivate)
    }
}
