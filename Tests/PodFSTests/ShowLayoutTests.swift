import Feeds
import Foundation
import Logging
@testable import PodFS
import RangeCache
import Testing

/// What a show folder holds and how its names survive refreshes.
@Suite struct ShowLayoutTests {
    // MARK: - Helpers

    private static let feedURL = "https://feeds.example/show.xml"
    private static let day: Int64 = 1_793_527_200  // 2026-11-01 10:00 UTC

    private var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    private func episode(
        _ guid: String, _ title: String?, day: Int64 = 0, transcripts: [ParsedTranscript] = [],
        chapters: ParsedChapters? = nil
    ) -> ParsedEpisode {
        ParsedEpisode(
            guid: guid, title: title, published: title == nil ? nil : Self.day + day * 86_400,
            enclosureURL: "https://cdn.example/\(guid).mp3", enclosureType: "audio/mpeg",
            transcripts: transcripts, chapters: chapters)
    }

    private func layout(
        _ episodes: [ParsedEpisode], image: String? = nil, previous: [String: String] = [:]
    ) -> ShowLayout {
        ShowLayout(
            feedURL: Self.feedURL, feed: ParsedFeed(title: "Show", imageURL: image, episodes: episodes),
            directoryName: "Show", previousNames: previous, logger: logger)
    }

    // MARK: - Names across refreshes

    @Test func aNewEpisodeAtTheTopRenamesNothing() {
        let old = [episode("b", "Same"), episode("a", "Same")]
        let before = layout(old)
        #expect(before.episodes.map(\.name) == ["2026-11-01 Same (2).mp3", "2026-11-01 Same.mp3"])
        let after = layout([episode("c", "Same")] + old, previous: before.names)
        #expect(after.episodes.map(\.name) == [
            "2026-11-01 Same (3).mp3", "2026-11-01 Same (2).mp3", "2026-11-01 Same.mp3",
        ])
    }

    @Test func removingTheOldestOfACollisionRenamesNoOther() {
        let before = layout([episode("c", "Same"), episode("b", "Same"), episode("a", "Same")])
        // Laid out afresh, "b" would now be the plain name; with the names
        // it had, nothing moves.
        let fresh = layout([episode("c", "Same"), episode("b", "Same")])
        #expect(fresh.episodes.map(\.name) == ["2026-11-01 Same (2).mp3", "2026-11-01 Same.mp3"])
        let kept = layout([episode("c", "Same"), episode("b", "Same")], previous: before.names)
        #expect(kept.episodes.map(\.name) == ["2026-11-01 Same (3).mp3", "2026-11-01 Same (2).mp3"])
    }

    @Test func anEditedTitleKeepsItsNameUntilTheNextMount() {
        let before = layout([episode("a", "Tpyo")])
        let after = layout([episode("a", "Typo"), episode("b", "Tpyo", day: 1)], previous: before.names)
        #expect(after.episodes.map(\.name) == ["2026-11-01 Tpyo.mp3", "2026-11-02 Tpyo.mp3"])
    }

    // MARK: - Added files

    @Test func transcriptsAndChaptersTakeTheEpisodesBaseName() {
        let transcripts = [
            ParsedTranscript(url: "https://t.example/1.vtt", type: "text/vtt", language: "en"),
            ParsedTranscript(url: "https://t.example/1de.vtt", type: "text/vtt", language: "de"),
            ParsedTranscript(url: "https://t.example/1.srt", type: "application/x-subrip"),
            ParsedTranscript(url: "https://t.example/1.json", type: "application/json"),
            ParsedTranscript(url: "https://t.example/1.html", type: "text/html"),
            ParsedTranscript(url: "https://t.example/x.txt", type: nil),
            ParsedTranscript(url: "https://t.example/x", type: "application/octet-stream"),
            ParsedTranscript(url: "https://t.example/1.vtt", type: "text/vtt", language: "en"),
        ]
        let show = layout([
            episode("a", "One", transcripts: transcripts, chapters: ParsedChapters(url: "https://t.example/c.json"))
        ])
        #expect(show.extras.map(\.name) == [
            "2026-11-01 One.vtt", "2026-11-01 One.de.vtt", "2026-11-01 One.srt", "2026-11-01 One.json",
            "2026-11-01 One.html", "2026-11-01 One.txt", "2026-11-01 One.transcript", "2026-11-01 One.chapters.json",
        ])
        #expect(show.extras.allSatisfy { $0.kind != .episode && $0.episode?.guid == "a" })
        #expect(Set(show.files.map(\.key)).count == show.files.count, "a repeated link is one file")
    }

    @Test func theCoverTakesTheImagesType() {
        #expect(layout([], image: "https://i.example/art.PNG?size=3000").extras.map(\.name) == ["cover.png"])
        #expect(layout([], image: "https://i.example/art.webp").extras.map(\.name) == ["cover.webp"])
        #expect(layout([], image: "https://i.example/art").extras.map(\.name) == ["cover.jpg"])
        #expect(layout([]).extras.isEmpty)
    }

    @Test func addedFilesNeverTakeAnEpisodesName() {
        // An episode without a media extension, titled like a transcript.
        var odd = episode("b", "One.srt")
        odd.enclosureType = nil
        odd.enclosureURL = "https://cdn.example/b"
        let show = layout([
            odd, episode("a", "One", transcripts: [ParsedTranscript(url: "https://t.example/1.srt", type: "text/srt")]),
        ])
        #expect(show.episodes.map(\.name) == ["2026-11-01 One.srt", "2026-11-01 One.mp3"])
        #expect(show.extras.map(\.name) == ["2026-11-01 One (2).srt"])
    }

    @Test func namesStayWithin255BytesAndKeepTheirSuffix() {
        let long = String(repeating: "é", count: 200)
        let show = layout([
            episode("a", long, transcripts: [ParsedTranscript(url: "https://t.example/1.vtt", type: "text/vtt")],
                chapters: ParsedChapters(url: "https://t.example/c.json"))
        ])
        for name in show.files.map(\.name) + [show.playlistName] {
            #expect(name.utf8.count <= 255)
        }
        #expect(show.extras.map { $0.name.hasSuffix(".vtt") || $0.name.hasSuffix(".chapters.json") } == [true, true])
    }

    // MARK: - Playlist

    /// A title on one playlist line: controls, DEL, C1 controls and every
    /// Unicode blank become one space, ASCII or not; other characters stay.
    @Test func aPlaylistTitleIsOneLineWithItsBlanksFolded() {
        #expect(ShowLayout.oneLine("\tA\u{7F}\u{85}b\u{A0}\u{2003}c\r\n~é ") == "A b c ~é")
        #expect(ShowLayout.oneLine(" \u{9F}\u{3000}") == nil)
        #expect(ShowLayout.oneLine("x\u{200B}y!") == "x\u{200B}y!")
    }

    @Test func thePlaylistListsEpisodesOldestFirstWithRelativePaths() {
        let show = layout([
            episode("c", "Third\nline", day: 2), episode("b", "#1 Hit", day: 1), episode("a", nil),
        ])
        #expect(show.playlistName == "Show.m3u")
        let text = String(decoding: show.playlist(), as: UTF8.self)
        #expect(
            text == """
                #EXTM3U
                #EXTINF:-1,untitled.mp3
                untitled.mp3
                #EXTINF:-1,#1 Hit
                2026-11-02 #1 Hit.mp3
                #EXTINF:-1,Third line
                2026-11-03 Third line.mp3

                """)
        let undated = layout([episode("x", nil)])
        #expect(String(decoding: undated.playlist(), as: UTF8.self).contains("\nuntitled.mp3\n"))
    }

    @Test func aNameStartingWithHashIsNotACommentInThePlaylist() {
        var hashed = episode("h", "#hash")
        hashed.published = nil
        let text = String(decoding: layout([hashed]).playlist(), as: UTF8.self)
        #expect(text.contains("\n./#hash.mp3\n"))
    }

    // MARK: - Catalogue refresh

    @Test func aRefreshKeepsInodesAndStateAndKeepsRemovedFilesReachable() throws {
        let directory = NSTemporaryDirectory() + "podfs-layout-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let index = try CacheIndex(directory: directory, logger: logger)
        let first = ParsedFeed(title: "Show", episodes: [episode("b", "Two", day: 1), episode("a", "One")])
        let catalog = try Catalog(feeds: [(url: Self.feedURL, feed: first)], index: index, logger: logger)
        let show = try #require(catalog.shows.first)
        let one = try #require(show.episodes.last)
        let second = ParsedFeed(title: "Show", episodes: [episode("c", "Three", day: 2), episode("b", "Two", day: 1)])
        let change = try catalog.update(url: Self.feedURL, feed: second)
        #expect(change.addedNames == ["2026-11-03 Three.mp3"])
        #expect(change.removedNames == ["2026-11-01 One.mp3"])
        #expect(change.playlistChanged && !change.isNewShow)
        #expect(change.newFiles.map(\.name) == ["2026-11-03 Three.mp3"])
        let updated = try #require(catalog.shows.first)
        #expect(updated.inode == show.inode)
        #expect(updated.episodes[1] === show.episodes[0], "a file that stays keeps its Episode")
        #expect(catalog.lookup(parent: show.inode, name: "2026-11-01 One.mp3") == nil)
        if case .episode(let removed)? = catalog.node(one.inode) {
            #expect(removed === one, "a removed file stays readable by inode")
        } else {
            Issue.record("the removed episode's inode is gone")
        }
        let unchanged = try catalog.update(url: Self.feedURL, feed: second)
        #expect(unchanged.isEmpty)
        // A second catalogue over the same index gives the same inodes.
        let again = try Catalog(feeds: [(url: Self.feedURL, feed: second)], index: index, logger: logger)
        #expect(again.shows.first?.episodes.map(\.inode) == updated.episodes.map(\.inode))
        let names = catalog.children(of: show.inode)?.map(\.name) ?? []
        #expect(names == ["2026-11-03 Three.mp3", "2026-11-02 Two.mp3", "Show.m3u"])
    }

    @Test func aFileWhoseFeedGivesAnotherLinkDateOrLengthIsRenewedInPlace() throws {
        let directory = NSTemporaryDirectory() + "podfs-layout-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let index = try CacheIndex(directory: directory, logger: logger)
        let first = ParsedFeed(title: "Show", episodes: [episode("b", "Two", day: 1), episode("a", "One")])
        let catalog = try Catalog(feeds: [(url: Self.feedURL, feed: first)], index: index, logger: logger)
        let before = try #require(catalog.shows.first?.episodes)
        // "b" moves host and path and is dated a day later; "a" gains a
        // tracking query and a length.
        var moved = episode("b", "Two", day: 2)
        moved.enclosureURL = "https://new-cdn.example/shows/b-v2.mp3"
        var tracked = episode("a", "One")
        tracked.enclosureURL += "?source=rss"
        tracked.enclosureLength = 4_000
        let change = try catalog.update(url: Self.feedURL, feed: ParsedFeed(title: "Show", episodes: [moved, tracked]))
        #expect(!change.isEmpty && change.addedNames.isEmpty && change.removedNames.isEmpty)
        let renewed = Dictionary(uniqueKeysWithValues: change.renewed.map { ($0.after.guid ?? "", $0) })
        let two = try #require(renewed["b"])
        #expect(two.before === before[0] && two.enclosureMoved)
        #expect(two.after.inode == before[0].inode && two.after.name == before[0].name, "the same file")
        #expect(two.after.url == moved.enclosureURL)
        #expect(two.after.modificationTime == before[0].modificationTime + 86_400)
        let one = try #require(renewed["a"])
        #expect(!one.enclosureMoved, "a new query alone is the same file")
        #expect(one.after.feedLength == 4_000 && one.after.modificationTime == before[1].modificationTime)
        // The tree lists the renewed objects; the read state is shared.
        if case .episode(let listed)? = catalog.lookup(parent: catalog.shows[0].inode, name: before[0].name),
            case .episode(let node)? = catalog.node(two.after.inode)
        {
            #expect(listed === two.after && node === two.after)
        } else {
            Issue.record("the renewed file is not the tree's node")
        }
        _ = two.before.state.withLock { $0.evicted() }
        #expect(two.after.state.isMade, "one read state for the file")
        #expect(try catalog.update(url: Self.feedURL, feed: ParsedFeed(title: "Show", episodes: [moved, tracked])).isEmpty)
    }

    @Test func aFeedThatFailedAtMountGetsItsFolderAtTheFirstGoodRefresh() throws {
        let directory = NSTemporaryDirectory() + "podfs-layout-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let index = try CacheIndex(directory: directory, logger: logger)
        let feed = ParsedFeed(title: "Show", episodes: [episode("a", "One")])
        let catalog = try Catalog(feeds: [(url: Self.feedURL, feed: feed)], index: index, logger: logger)
        let late = ParsedFeed(title: "Show", episodes: [episode("z", "Late")])
        let change = try catalog.update(url: "https://other.example/feed.xml", feed: late)
        #expect(change.isNewShow)
        let root = catalog.children(of: Catalog.rootInode)?.map(\.name)
        #expect(root == ["Show", "Show (2)", "Latest.m3u"], "a new folder never takes an existing one's name")
        #expect(catalog.lookup(parent: change.showInode, name: "2026-11-01 Late.mp3") != nil)
    }
}
