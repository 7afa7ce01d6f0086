import Foundation
import Testing

@testable import podfs

/// Where a cache's subscriptions live and how they change: the SOURCE
/// file when it is one file, else the cache's list, and the same mount
/// command giving the same shows after subscribe and unsubscribe.
@Suite struct SubscriptionListTests {
    // MARK: - Helpers

    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "podfs-list-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path + "/cache", withIntermediateDirectories: true)
        return path
    }

    private static func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    // MARK: - Tests

    @Test func oneSourceFileIsTheListAndKeepsItsComments() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/shows.txt"
        try "# mine\nhttp://a.example/1.xml  \n\n# more\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o640)
        let (list, urls) = try SubscriptionList.forMount(sources: [path], cacheDirectory: directory + "/cache")
        #expect(list.isSourceFile && list.path == path)
        #expect(urls == ["http://a.example/1.xml"])
        #expect(try list.add(url: "http://b.example/2.xml", title: "B"))
        #expect(try !list.add(url: "http://b.example/2.xml", title: "B"), "listed already")
        #expect(Self.text(path) == "# mine\nhttp://a.example/1.xml  \n\n# more\nhttp://b.example/2.xml # B\n")
        #expect(try list.remove(url: "http://a.example/1.xml"))
        #expect(Self.text(path) == "# mine\n\n# more\nhttp://b.example/2.xml # B\n")
        var info = stat()
        stat(path, &info)
        #expect(info.st_mode & 0o777 == 0o640, "an edit keeps the file's permissions")
        #expect(!FileManager.default.fileExists(atPath: path + ".podfs-new"))
        // The commands with no mount find the same file.
        #expect(SubscriptionList.current(cacheDirectory: directory + "/cache").path == path)
    }

    @Test func urlsOnTheCommandLineSeedTheCachesListOnce() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let given = ["http://a.example/1.xml", "http://b.example/2.xml"]
        let (list, urls) = try SubscriptionList.forMount(sources: given, cacheDirectory: cache)
        #expect(!list.isSourceFile && list.path == cache + "/subscriptions.txt")
        #expect(urls == given)
        #expect(try list.add(url: "http://c.example/3.xml", title: nil))
        #expect(try list.remove(url: "http://a.example/1.xml"))
        // The same command again: what was added is in, what was removed out.
        let (_, again) = try SubscriptionList.forMount(sources: given, cacheDirectory: cache)
        #expect(again == ["http://b.example/2.xml", "http://c.example/3.xml"])
        // No SOURCE: the cache's list.
        let (_, bare) = try SubscriptionList.forMount(sources: [], cacheDirectory: cache)
        #expect(bare == again)
        // Subscribing again brings a removed feed back for good.
        #expect(try list.add(url: "http://a.example/1.xml", title: nil))
        let (_, back) = try SubscriptionList.forMount(sources: given, cacheDirectory: cache)
        #expect(back == ["http://b.example/2.xml", "http://c.example/3.xml", "http://a.example/1.xml"])
    }

    @Test func anEditByHandThatRemovesAFeedKeepsItOut() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let given = ["http://a.example/1.xml"]
        let (list, _) = try SubscriptionList.forMount(sources: given, cacheDirectory: cache)
        try "".write(toFile: list.path, atomically: true, encoding: .utf8)
        let (_, again) = try SubscriptionList.forMount(sources: given, cacheDirectory: cache)
        #expect(again.isEmpty)
    }

    @Test func aMountCommandThatNamesOtherFeedsReplacesTheOnesItNamedBefore() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let (list, _) = try SubscriptionList.forMount(sources: ["http://a.example/1.xml"], cacheDirectory: cache)
        #expect(try list.add(url: "http://c.example/3.xml", title: nil))
        let (_, moved) = try SubscriptionList.forMount(sources: ["http://b.example/2.xml"], cacheDirectory: cache)
        #expect(moved == ["http://c.example/3.xml", "http://b.example/2.xml"], "the subscription stays, the old seed goes")
    }

    @Test func theSeedRule() {
        let (a, b, c) = ("http://a/", "http://b/", "http://c/")
        // The same command, nothing changed since.
        #expect(SubscriptionSeed.change(list: [a, b], seed: [a, b], commandLine: [a, b]) == ([], []))
        // Unsubscribed: stays out. Subscribed: stays in.
        #expect(SubscriptionSeed.change(list: [b, c], seed: [a, b], commandLine: [a, b]) == ([], []))
        // A new command: its new feed comes in, the old one that it no
        // longer names goes, a subscription stays.
        #expect(SubscriptionSeed.change(list: [a, c], seed: [a], commandLine: [b]) == ([a], [b]))
        // A first mount.
        #expect(SubscriptionSeed.change(list: [], seed: [], commandLine: [a, b]) == ([], [a, b]))
    }

    @Test func aListThatDoesNotReadIsAnErrorThatNamesIt() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/shows.txt"
        try "not a url\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: SubscriptionList.Failure.self) {
            _ = try SubscriptionList.forMount(sources: [path], cacheDirectory: directory + "/cache")
        }
        let list = SubscriptionList(path: path, isSourceFile: true, cacheDirectory: directory + "/cache")
        do {
            _ = try list.add(url: "http://a.example/1.xml", title: nil)
            Issue.record("a list that does not read is not edited")
        } catch {
            #expect(error.description.contains(path))
        }
        #expect(Self.text(path) == "not a url\n", "unchanged")
    }

    @Test func theSignatureMovesWithAnEditInPlaceOrARename() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/shows.txt"
        try "http://a.example/1.xml\n".write(toFile: path, atomically: true, encoding: .utf8)
        let list = SubscriptionList(path: path, isSourceFile: true, cacheDirectory: directory + "/cache")
        let first = list.signature()
        try "http://b.example/1.xml\n".write(toFile: path, atomically: false, encoding: .utf8)
        let inPlace = list.signature()
        #expect(inPlace != first)
        try "http://b.example/1.xml\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(list.signature() != inPlace, "a rename gives a new inode")
    }
}
