import Feeds
import Foundation
import Logging
import RangeCache
import Testing
import TestSupport

@testable import PodFS
@testable import ReadRules

/// The root's `Latest.m3u` (docs/DESIGN.md, "What a mount shows"): the
/// pure builder, then the catalogue that holds it.
@Suite struct LatestPlaylistTests {
    // MARK: - Helpers

    private static let now: Int64 = 1_793_527_200  // 2026-11-01 10:00 UTC
    private static let day: Int64 = 86_400

    private var logger: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    private static func entry(_ name: String, daysAgo: Int64, seconds: Int64 = 0) -> LatestPlaylist.Entry {
        LatestPlaylist.Entry(published: now - daysAgo * day - seconds, title: name, name: name + ".mp3")
    }

    /// The playlist's lines after `#EXTM3U`, in pairs: (EXTINF, path).
    private static func lines(_ shows: [LatestPlaylist.Source], now: Int64 = now) -> [String] {
        let text = String(decoding: LatestPlaylist.content(of: shows, now: now).bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "#EXTM3U")
        #expect(lines.last == "", "it ends with a line break")
        lines = Array(lines.dropFirst().dropLast())
        #expect(lines.count % 2 == 0)
        return lines
    }

    /// The paths the playlist lists, in order.
    private static func paths(_ shows: [LatestPlaylist.Source], now: Int64 = now) -> [String] {
        lines(shows, now: now).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
    }

    private func episode(_ guid: String, _ title: String?, published: Int64?) -> ParsedEpisode {
        ParsedEpisode(
            guid: guid, title: title, published: published, enclosureURL: "https://cdn.example/\(guid).mp3",
            enclosureType: "audio/mpeg")
    }

    private func withIndex(_ body: (CacheIndex) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "podfs-latest-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(try CacheIndex(directory: directory, logger: logger))
    }

    private static func text(_ playlist: Playlist) -> String {
        String(decoding: playlist.content, as: UTF8.self)
    }

    // MARK: - The builder

    @Test func onlyTheLast14DaysNewestFirstAcrossShows() {
        let shows: [LatestPlaylist.Source] = [
            (
                "Alpha",
                [
                    Self.entry("a1", daysAgo: 1), Self.entry("a13", daysAgo: 13),
                    Self.entry("a14", daysAgo: 14), Self.entry("a14-and-a-second", daysAgo: 14, seconds: 1),
                    Self.entry("a15", daysAgo: 15),
                ]
            ),
            ("Beta", [Self.entry("b0", daysAgo: 0), Self.entry("b3", daysAgo: 3), Self.entry("b40", daysAgo: 40)]),
        ]
        #expect(
            Self.paths(shows) == [
                "Beta/b0.mp3", "Alpha/a1.mp3", "Beta/b3.mp3", "Alpha/a13.mp3", "Alpha/a14.mp3",
            ], "14 days to the second, not a second more")
        #expect(LatestPlaylist.content(of: shows, now: Self.now).newest == Self.now)
        // A day later the cutoff has moved on.
        #expect(Self.paths(shows, now: Self.now + Self.day).last == "Alpha/a13.mp3")
    }

    @Test func linesMatchTheShowPlaylists() {
        let shows: [LatestPlaylist.Source] = [("Alpha", [Self.entry("One", daysAgo: 2)])]
        let text = String(decoding: LatestPlaylist.content(of: shows, now: Self.now).bytes, as: UTF8.self)
        #expect(text == "#EXTM3U\n#EXTINF:-1,Alpha — One\nAlpha/One.mp3\n")
    }

    @Test func atMostOneHundredTheNewest() {
        // 3 shows of 50, one episode an hour: 150 within the window.
        let shows: [LatestPlaylist.Source] = (0..<3).map { show in
            (
                "Show \(show)",
                (0..<50).map { hour in
                    LatestPlaylist.Entry(
                        published: Self.now - Int64(hour * 3 + show) * 3600, title: "e\(hour)", name: "e\(hour).mp3")
                }
            )
        }
        let paths = Self.paths(shows)
        #expect(paths.count == LatestPlaylist.limit)
        #expect(paths.first == "Show 0/e0.mp3")
        // The hundredth newest: hour 33 of show 0 (3 × 33 + 0 = 99 hours ago).
        #expect(paths.last == "Show 0/e33.mp3")
        let published = shows.flatMap(\.entries).map(\.published).sorted(by: >)
        #expect(LatestPlaylist.content(of: shows, now: Self.now).newest == published.first)
    }

    @Test func tiesKeepTheShowOrderThenTheListingOrder() {
        let shows: [LatestPlaylist.Source] = [
            ("Zeta", [Self.entry("z1", daysAgo: 1), Self.entry("z2", daysAgo: 1)]),
            ("Alpha", [Self.entry("a2", daysAgo: 1), Self.entry("a1", daysAgo: 1), Self.entry("a0", daysAgo: 0)]),
        ]
        #expect(Self.paths(shows) == ["Alpha/a0.mp3", "Zeta/z1.mp3", "Zeta/z2.mp3", "Alpha/a2.mp3", "Alpha/a1.mp3"])
    }

    /// The merge of each show's newest-first entries lists what a sort of
    /// every entry would: 200 random rounds, some shows out of order.
    @Test func theMergeListsWhatASortOfEveryEntryWould() {
        var generator = SeededGenerator(state: 40)
        for _ in 0..<200 {
            let shows: [LatestPlaylist.Source] = (0..<Int.random(in: 0...12, using: &generator)).map { show in
                // Coarse times, so that ties are common; some beyond the window.
                var entries = (0..<Int.random(in: 0...30, using: &generator)).map { position in
                    LatestPlaylist.Entry(
                        published: Self.now - Int64.random(in: 0...20, using: &generator) * Self.day,
                        title: "e\(position)", name: "s\(show)e\(position).mp3")
                }
                if Bool.random(using: &generator) { entries.sort { $0.published > $1.published } }
                return ("Show \(show)", entries)
            }
            let cutoff = Self.now - LatestPlaylist.window
            let reference = shows.enumerated()
                .flatMap { show, source in
                    source.entries.enumerated().map { (entry: $1, show: show, position: $0, folder: source.folder) }
                }
                .filter { $0.entry.published >= cutoff }
                .sorted { a, b in
                    a.entry.published != b.entry.published
                        ? a.entry.published > b.entry.published : (a.show, a.position) < (b.show, b.position)
                }
                .prefix(LatestPlaylist.limit)
            #expect(Self.paths(shows) == reference.map { "\($0.folder)/\($0.entry.name)" })
            #expect(LatestPlaylist.content(of: shows, now: Self.now).newest == reference.first?.entry.published)
        }
    }

    @Test func nothingToListIsTheHeaderAlone() {
        #expect(LatestPlaylist.content(of: [], now: Self.now).bytes == Array("#EXTM3U\n".utf8))
        #expect(LatestPlaylist.content(of: [], now: Self.now).newest == nil)
        let old: [LatestPlaylist.Source] = [("Alpha", [Self.entry("old", daysAgo: 30)])]
        #expect(LatestPlaylist.content(of: old, now: Self.now).bytes == Array("#EXTM3U\n".utf8))
    }

    @Test func aFolderStartingWithAHashIsNoComment() {
        let shows: [LatestPlaylist.Source] = [
            (
                "#1 Show: ünïcode — & spaces",
                [LatestPlaylist.Entry(published: Self.now, title: "Title, with — dash", name: "2026-11-01 #hash.mp3")]
            )
        ]
        #expect(
            Self.lines(shows) == [
                "#EXTINF:-1,#1 Show: ünïcode — & spaces — Title, with — dash",
                "./#1 Show: ünïcode — & spaces/2026-11-01 #hash.mp3",
            ])
    }

    // MARK: - What a show keeps for it

    @Test func aShowKeepsItsDatedRecentEpisodesNewestFirstWithTitlesOnOneLine() {
        let feed = ParsedFeed(
            title: "Show",
            episodes: [
                episode("old", "Old", published: Self.now - 20 * Self.day),
                episode("undated", "No date", published: nil),
                episode("tie-1", "Tie\none", published: Self.now - Self.day),
                episode("new", nil, published: Self.now - 3600),
                episode("tie-2", "Tie\ttwo", published: Self.now - Self.day),
                episode("future", "Ahead", published: Self.now + 600),
            ])
        let layout = ShowLayout(
            feedURL: "https://feeds.example/show.xml", feed: feed, directoryName: "Show", logger: logger)
        let entries = LatestPlaylist.entries(of: layout.episodes, now: Self.now)
        let names = Dictionary(uniqueKeysWithValues: layout.episodes.map { ($0.episode?.guid ?? "", $0.name) })
        // No title: the file's name stands for it.
        #expect(entries.map(\.title) == ["Ahead", names["new"] ?? "", "Tie one", "Tie two"])
        #expect(entries.map(\.name) == ["future", "new", "tie-1", "tie-2"].map { names[$0] ?? "" })
        #expect(!entries.contains { $0.name == names["undated"] }, "an episode with no date is left out")
    }

    @Test func aShowKeepsAtMostOneHundred() {
        let episodes = (0..<150).map { episode("e\($0)", "E\($0)", published: Self.now - Int64($0) * 60) }
        let layout = ShowLayout(
            feedURL: "https://feeds.example/show.xml", feed: ParsedFeed(title: "Show", episodes: episodes),
            directoryName: "Show", logger: logger)
        let entries = LatestPlaylist.entries(of: layout.episodes, now: Self.now)
        #expect(entries.map(\.title) == (0..<100).map { "E\($0)" })
    }

    // MARK: - In the catalogue

    @Test func theRootAlwaysListsItAndARefreshRemakesItOnlyWhenItChanges() throws {
        try withIndex { index in
            let now = Int64(Date().timeIntervalSince1970)
            let catalog = try Catalog(feeds: [], index: index, logger: logger)
            guard case .playlist(let empty) = catalog.lookup(parent: Catalog.rootInode, name: "Latest.m3u") else {
                Issue.record("an empty mount lists Latest.m3u")
                return
            }
            #expect(Self.text(empty) == "#EXTM3U\n")
            #expect(empty.modificationTime >= now, "an empty mount's playlist has the mount's time, not 1970")
            #expect(catalog.rootModificationTime >= now)
            #expect(empty.inode == Catalog.latestPlaylistInode)
            #expect(catalog.children(of: Catalog.rootInode)?.map(\.name) == ["Latest.m3u"])

            let url = "https://feeds.example/a.xml"
            let first = ParsedFeed(
                title: "Alpha",
                episodes: [
                    episode("2", "Two", published: now - 2 * Self.day), episode("1", "One", published: now - 20 * Self.day),
                ])
            var change = try catalog.update(url: url, feed: first)
            #expect(change.latestChanged)
            let one = catalog.latestPlaylist
            #expect(Self.text(one).hasSuffix("#EXTINF:-1,Alpha — Two\nAlpha/\(Self.dateName(now - 2 * Self.day)) Two.mp3\n"))
            #expect(one.modificationTime == now - 2 * Self.day, "its time is its newest episode's")
            guard case .playlist(let node) = catalog.node(Catalog.latestPlaylistInode) else {
                Issue.record("its inode is a node")
                return
            }
            #expect(node === one)

            change = try catalog.update(url: url, feed: first)
            #expect(!change.latestChanged)
            #expect(catalog.latestPlaylist === one, "the same bytes keep the same playlist")

            let second = ParsedFeed(title: "Alpha", episodes: [episode("3", "Three", published: now - 60)] + first.episodes)
            change = try catalog.update(url: url, feed: second)
            #expect(change.latestChanged && !change.isEmpty)
            #expect(Self.text(catalog.latestPlaylist).split(separator: "\n").count == 5)
            #expect(Self.text(one).split(separator: "\n").count == 3, "an open file reads the version it opened")
        }
    }

    @Test func aShowTitledLatestM3UTakesAnotherName() throws {
        try withIndex { index in
            let feed = ParsedFeed(title: "Latest.m3u", episodes: [episode("1", "One", published: Self.now)])
            let catalog = try Catalog(feeds: [(url: "https://feeds.example/a.xml", feed: feed)], index: index, logger: logger)
            let change = try catalog.update(url: "https://feeds.example/b.xml", feed: feed)
            #expect(
                catalog.children(of: Catalog.rootInode)?.map(\.name) == [
                    "Latest.m3u (2)", "Latest.m3u (3)", "Latest.m3u",
                ])
            #expect(change.showName == "Latest.m3u (3)")
            guard case .playlist = catalog.lookup(parent: Catalog.rootInode, name: "Latest.m3u") else {
                Issue.record("the name is the playlist's")
                return
            }
        }
    }

    @Test func itsInodeIsOfTheFixedKindAndNoControlFileReachesIt() {
        #expect(Catalog.latestPlaylistInode & 3 == 0)
        #expect(Catalog.latestPlaylistInode <= UInt64(Int32.max))
        let control = ControlFiles(files: [
            .init(name: "status", generate: { [] }), .init(name: "status.json", generate: { [] }),
        ])
        #expect(!control.owns(Catalog.latestPlaylistInode))
    }

    /// `YYYY-MM-DD` of a time, as file names begin.
    private static func dateName(_ time: Int64) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd"
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.locale = Locale(identifier: "en_US_POSIX")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(time)))
    }
}
