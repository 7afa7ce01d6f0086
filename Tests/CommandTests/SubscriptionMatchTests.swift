import Foundation
import Testing

@testable import podfs

/// A show's name in another case, or the title its list gives a show with
/// no folder yet, names it for `unsubscribe` (URLs and names as typed:
/// `SubscriptionResolverTests.aNameOrAURLNamesASubscription`).
@Suite struct SubscriptionMatchTests {
    private static let urls = ["https://a.example/f", "https://b.example/f", "https://c.example/f"]

    @Test func aNameMatchesInAnyCaseWhenItNamesOneShow() {
        let names = ["Daily News": "https://a.example/f", "daily news": "https://b.example/f", "Tech Talk": "https://c.example/f"]
        #expect(SubscriptionMatch.url(of: "tech talk", among: Self.urls, names: names) == "https://c.example/f")
        #expect(SubscriptionMatch.url(of: "TECH TALK", among: Self.urls, names: names) == "https://c.example/f")
        // Two shows differ by case only: as typed, or neither.
        #expect(SubscriptionMatch.url(of: "daily news", among: Self.urls, names: names) == "https://b.example/f")
        #expect(SubscriptionMatch.url(of: "DAILY NEWS", among: Self.urls, names: names) == nil)
        // A name of a feed no longer subscribed matches nothing.
        #expect(SubscriptionMatch.url(of: "tech talk", among: ["https://a.example/f"], names: names) == nil)
    }

    @Test func aFeedURLMatchesInAnotherSpellingOfIt() {
        let urls = ["http://localhost:8080/c.xml", "https://A.example/Feed?x=1"]
        #expect(SubscriptionMatch.url(of: "HTTP://LocalHost:8080/c.xml", among: urls, names: [:]) == urls[0])
        #expect(SubscriptionMatch.url(of: "https://a.example:443/Feed?x=1#top", among: urls, names: [:]) == urls[1])
        #expect(SubscriptionMatch.url(of: "https://a.example/feed?x=1", among: urls, names: [:]) == nil, "a path's case counts")
    }

    /// A list edited by hand that holds one feed in several spellings is
    /// one subscription (the first spelling), not a show for each; one
    /// removal takes them all.
    @Test func aFeedListedTwiceByHandIsOneSubscription() throws {
        let directory = NSTemporaryDirectory() + "podfs-list-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lines = [
            "http://127.0.0.1:8080/sub.xml", "HTTP://127.0.0.1:8080/sub.xml?", "http://localhost:80/sub.xml",
            "http://LOCALHOST/sub.xml#frag", "http://127.0.0.1:8080/feed.xml", "http://127.0.0.1:8080/sub.xml",
        ]
        try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/subscriptions.txt", atomically: true, encoding: .utf8)
        let list = SubscriptionList.current(cacheDirectory: directory)
        #expect(try list.urls() == ["http://127.0.0.1:8080/sub.xml", "http://localhost:80/sub.xml", "http://127.0.0.1:8080/feed.xml"])
        #expect(try list.remove(url: "http://127.0.0.1:8080/sub.xml"))
        #expect(try list.urls() == ["http://localhost:80/sub.xml", "http://127.0.0.1:8080/feed.xml"])
        #expect(try list.remove(url: "http://LocalHost/sub.xml"))
        #expect(try list.urls() == ["http://127.0.0.1:8080/feed.xml"])
    }

    @Test func aListsTitleStandsInForAShowWithNoFolderYet() {
        let names = SubscriptionMatch.names(
            shows: ["Folder A": "https://a.example/f"],
            titles: ["https://a.example/f": "Title A", "https://b.example/f": "Title B", "https://c.example/f": "Folder A"])
        #expect(names == ["Folder A": "https://a.example/f", "Title B": "https://b.example/f"])
        #expect(SubscriptionMatch.url(of: "title b", among: Self.urls, names: names) == "https://b.example/f")
        #expect(SubscriptionMatch.url(of: "Title A", among: Self.urls, names: names) == nil)
    }
}
