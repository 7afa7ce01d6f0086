// libFuzzer target for the whole path a feed takes (scripts/fuzz path): feed
// bytes -> FeedParser -> Catalog (ShowLayout, Naming) -> the attributes a
// `stat` returns (PodFileSystem.listedAttributes, makeStat) -> the fetches
// that reads of every file plan (ReadPlan). Compiled against the real modules
// (scripts/fuzz builds them with coverage); the unit tests replay the corpus
// through the same function. Properties: nothing traps, a refresh with the
// same feed renames nothing, and every name keeps the naming rules (valid
// UTF-8, NFC, no '/', NUL, control or invisible character, not '.' or '..',
// no leading '.' or '-', at most 255 bytes, unique in its folder).

import Feeds
@testable import FUSEBridge
import Glibc
import Logging
@testable import PodFS
@testable import ReadRules
import RangeCache

/// The two feed URLs every input is mounted under: the same feed twice, so
/// the two folders' names collide.
private let pathFuzzFeedURLs = ["https://feeds.example.org/show/feed.xml", "https://feeds.example.org/two/feed.xml"]

/// The largest read the kernel sends (FUSE's `max_read` is at most 1 MiB).
private let pathFuzzLargestRead = 1 << 20

/// One input, mounted with `index` (a cache index in a scratch directory);
/// throws a `PathFuzzFinding` on a finding (a trap is one too). The
/// target's entry file turns a finding into a crash for libFuzzer; the unit
/// tests that replay the corpus fail the one test, naming the input.
func pathFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int, index: CacheIndex) throws -> CInt {
    _ = try pathFuzzRun(data, size, index: index)
    return 0
}

/// What one input went through: how far it got, so a test can tell an
/// input that was `stat`ed and read from one that stopped at the parser.
struct PathFuzzReport: Sendable {
    /// Whether the refresh with the same feed ran (the second walk).
    var refreshed = false

    /// Nodes `stat`ed through `makeStat`: the root, the folders and the
    /// files, on both walks.
    var stats = 0

    /// The sizes `stat` showed for the files, on both walks.
    var fileSizes: [Int64] = []

    /// The sizes `stat` showed for the episodes' files (not their
    /// transcripts, chapters or covers), on both walks.
    var episodeSizes: [Int64] = []

    /// Reads that `ReadPlan` planned a fetch for (each fetch checked), not
    /// counting the empty reads at and past the end.
    var plannedFetches = 0
}

/// `pathFuzzOneInput`, telling what the input went through: `nil` when the
/// bytes are not a feed or the index cannot take it (nothing past the
/// parser ran).
func pathFuzzRun(_ data: UnsafePointer<UInt8>?, _ size: Int, index: CacheIndex) throws -> PathFuzzReport? {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    guard let feed = try? FeedParser.parse(bytes, baseURL: pathFuzzFeedURLs[0]) else { return nil }
    let logger = Logger(label: "podfs.pathfuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    // An index that cannot take the feed is an error the mount reports, not
    // a finding of this target.
    guard let catalog = try? Catalog(feeds: pathFuzzFeedURLs.map { ($0, feed) }, index: index, logger: logger) else {
        return nil
    }
    let fileSystem = PodFileSystem(
        catalog: catalog, reader: EpisodeReader(index: index, source: PathFuzzNoSource(), logger: logger),
        logger: logger)
    var random = PathFuzzRandom(bytes)
    var report = PathFuzzReport()
    let before = try pathFuzzWalk(fileSystem, catalog, &random, &report)
    // A refresh with the same feed renames nothing.
    guard (try? catalog.update(url: pathFuzzFeedURLs[0], feed: feed)) != nil else { return report }
    report.refreshed = true
    let after = try pathFuzzWalk(fileSystem, catalog, &random, &report)
    try pathFuzzCheck(before == after, "a refresh with the same feed renamed files: \(before) -> \(after)")
    // `podfs status` names the episodes as the mount does.
    let statusNames = Catalog.layout(feedURL: pathFuzzFeedURLs[0], feed: feed, logger: logger).map(\.name)
    let mountNames = catalog.shows[0].episodes.map(\.name)
    try pathFuzzCheck(statusNames == mountNames, "podfs status names \(statusNames), the mount \(mountNames)")
    return report
}

// MARK: - The tree

/// Lists, checks and stats every node of the mount, plans reads of every
/// file; returns every path, for the refresh to compare.
private func pathFuzzWalk(
    _ fileSystem: PodFileSystem, _ catalog: Catalog, _ random: inout PathFuzzRandom, _ report: inout PathFuzzReport
) throws -> [String] {
    var paths: [String] = []
    try pathFuzzStat(fileSystem, Catalog.rootInode, &report)
    guard let shows = try? fileSystem.readdir(inode: Catalog.rootInode) else {
        throw PathFuzzFinding(description: "the root cannot be listed")
    }
    try pathFuzzCheckNames(shows.map(\.name), in: "/")
    for show in shows {
        let attributes = try pathFuzzStat(fileSystem, show.inode, &report)
        // The root's one file, `Latest.m3u`: read like any other file.
        guard show.kind == .directory else {
            try pathFuzzCheck(catalog.lookup(parent: Catalog.rootInode, name: show.name) != nil, "/\(show.name) not found")
            paths.append(show.name)
            report.fileSizes.append(attributes.size)
            try pathFuzzPlanReads(length: attributes.size, &random, &report)
            continue
        }
        guard let entries = try? fileSystem.readdir(inode: show.inode) else {
            throw PathFuzzFinding(description: "the folder \(show.name) cannot be listed")
        }
        try pathFuzzCheckNames(entries.map(\.name), in: show.name)
        for entry in entries {
            paths.append(show.name + "/" + entry.name)
            guard case .some(let node) = catalog.lookup(parent: show.inode, name: entry.name) else {
                throw PathFuzzFinding(description: "\(show.name)/\(entry.name) is listed but not found")
            }
            let attributes = try pathFuzzStat(fileSystem, entry.inode, &report)
            report.fileSizes.append(attributes.size)
            if case .episode(let episode) = node {
                try pathFuzzCheck(episode.inode == entry.inode, "\(entry.name) looks up another inode")
                if episode.isEpisode { report.episodeSizes.append(attributes.size) }
            }
            try pathFuzzPlanReads(length: attributes.size, &random, &report)
        }
    }
    return paths
}

/// What `stat` shows for `inode`, through the bridge's conversion.
@discardableResult
private func pathFuzzStat(
    _ fileSystem: PodFileSystem, _ inode: UInt64, _ report: inout PathFuzzReport
) throws -> Attributes {
    guard let (attributes, timeout) = fileSystem.listedAttributes(inode: inode) else {
        throw PathFuzzFinding(description: "no attributes for listed inode \(inode)")
    }
    try pathFuzzCheck(timeout.isFinite && timeout >= 0, "attribute timeout \(timeout)")
    let st = makeStat(attributes)
    try pathFuzzCheck(Int64(st.st_size) == attributes.size, "st_size \(st.st_size) for size \(attributes.size)")
    report.stats += 1
    return attributes
}

// MARK: - Names

/// The naming rules, for the names of one folder.
private func pathFuzzCheckNames(_ names: [String], in folder: String) throws {
    var seen = Set<[UInt8]>()
    for name in names {
        let bytes = Array(name.utf8)
        try pathFuzzCheck(seen.insert(bytes).inserted, "\(folder): two names \(bytes)")
        try pathFuzzCheck(!bytes.isEmpty && bytes.count <= Naming.maximumNameBytes, "\(folder): length of \(bytes)")
        try pathFuzzCheck(name != "." && name != "..", "\(folder): the name \(name)")
        try pathFuzzCheck(!bytes.contains(0x2F) && !bytes.contains(0), "\(folder): '/' or NUL in \(bytes)")
        try pathFuzzCheck(bytes.first != 0x2E && bytes.first != 0x2D, "\(folder): leading '.' or '-' in \(bytes)")
        try pathFuzzCheck(
            String(decoding: bytes, as: UTF8.self).utf8.elementsEqual(bytes), "\(folder): invalid UTF-8 \(bytes)")
        try pathFuzzCheck(name._nfcCodeUnits == bytes, "\(folder): not NFC: \(bytes)")
        let scalars = Array(name.unicodeScalars)
        for (position, scalar) in scalars.enumerated() {
            if scalar.properties.isWhitespace {
                try pathFuzzCheck(scalar == " ", "\(folder): white space U+\(scalar.value) in \(bytes)")
            }
            guard Naming.isInvisible(scalar) else { continue }
            let before = position > 0 ? scalars[position - 1] : nil
            let after = position + 1 < scalars.count ? scalars[position + 1] : nil
            try pathFuzzCheck(
                pathFuzzIsEmojiPart(scalar, before: before, after: after),
                "\(folder): invisible U+\(String(scalar.value, radix: 16)) in \(bytes)")
        }
    }
}

/// Where an invisible character may stay: a joiner between two emoji, a
/// style selector after one, the tags of a flag.
private func pathFuzzIsEmojiPart(_ scalar: Unicode.Scalar, before: Unicode.Scalar?, after: Unicode.Scalar?) -> Bool {
    func isEmoji(_ scalar: Unicode.Scalar?) -> Bool {
        guard let scalar else { return false }
        return scalar.value > 0x7F && scalar.properties.isEmoji
    }
    switch scalar.value {
    case 0x200D: return (isEmoji(before) || before?.value == 0xFE0F) && isEmoji(after)
    case 0xFE0E, 0xFE0F: return isEmoji(before)
    case 0xE0020...0xE007F: return before.map { $0.value == 0x1F3F4 || (0xE0020...0xE007E).contains($0.value) } ?? false
    default: return false
    }
}

// MARK: - Reads

/// The reads the target plans for one file of `length` bytes, alone (for a
/// length the feed parser no longer lets through), with `seed` choosing
/// the random reads.
func pathFuzzPlanReads(length: Int64, seed: [UInt8]) throws -> PathFuzzReport {
    var random = PathFuzzRandom(seed)
    var report = PathFuzzReport()
    try pathFuzzPlanReads(length: length, &random, &report)
    return report
}

/// Plans reads of a file of `length` bytes as the reader does (ReadPlan):
/// a stream from a random place, reads at and past the end, random reads.
/// Every fetch is non-empty, inside the file and covers its read. Reads
/// keep to what the kernel sends: `offset + size` never beyond `Int64.max`.
private func pathFuzzPlanReads(
    length: Int64, _ random: inout PathFuzzRandom, _ report: inout PathFuzzReport
) throws {
    guard length >= 0 else { throw PathFuzzFinding(description: "negative size \(length)") }
    let tuning = EpisodeReader.Tuning()
    var link = LinkEstimate()
    if random.next() % 2 == 0 {
        link.observe(latency: Double(random.next() % 100_000) / 1_000_000)
        link.observe(bytes: Int64(random.next() % (1 << 32)), in: Double(random.next() % 1000 + 1) / 1000)
    }
    var reads: [(offset: Int64, size: Int)] = []
    let start = random.offset(in: length)
    for step in 0..<6 { reads.append((start &+ Int64(step) * 131_072, 131_072)) }
    reads.append((max(0, length - 1), 4096))
    reads.append((length, 4096))
    reads.append((random.offset(in: length), Int(random.next() % UInt64(pathFuzzLargestRead)) + 1))
    var streak = 0
    var nextOffset: Int64 = 0
    for (offset, size) in reads where offset >= 0 && offset <= Int64.max - Int64(size) {
        streak = offset == nextOffset ? streak + 1 : 0
        let window = ReadPlan.window(streak: streak, link: link, tuning: tuning)
        try pathFuzzCheck(window > 0, "window \(window) at streak \(streak)")
        let end = ReadPlan.end(offset: offset, size: size, length: length)
        nextOffset = end
        try pathFuzzCheck(end <= length, "read \(offset)+\(size) ends at \(end) past \(length)")
        guard offset < end else { continue }
        report.plannedFetches += 1
        let wanted = offset..<end
        let upper = max(ReadPlan.widenedEnd(of: wanted, window: window, length: length), wanted.upperBound)
        try pathFuzzCheckFetch(wanted.lowerBound..<upper, covering: wanted, length: length)
        guard streak >= 2 else { continue }
        let (ahead, refill) = ReadPlan.readAheadTarget(
            window: window, maximumWindow: tuning.maximumWindow, outruns: link.outruns(window: window))
        try pathFuzzCheck(ahead >= window && refill >= window, "ahead \(ahead), refill \(refill), window \(window)")
        var frontier = upper
        guard frontier - end < refill else { continue }
        var windows = 0
        while frontier < length, frontier - end < ahead {
            let gapEnd = ReadPlan.readAheadEnd(from: frontier, window: window, length: length, nextCovered: length)
            let gap = frontier..<gapEnd
            let fetchEnd = max(ReadPlan.widenedEnd(of: gap, window: window, length: length), gapEnd)
            try pathFuzzCheckFetch(frontier..<fetchEnd, covering: gap, length: length)
            frontier = fetchEnd
            windows += 1
            try pathFuzzCheck(windows <= 4, "read-ahead of \(windows) windows of \(window) for \(ahead)")
        }
    }
}

private func pathFuzzCheckFetch(_ fetch: Range<Int64>, covering wanted: Range<Int64>, length: Int64) throws {
    try pathFuzzCheck(
        !fetch.isEmpty && fetch.lowerBound >= 0 && fetch.upperBound <= length && fetch.lowerBound <= wanted.lowerBound
            && fetch.upperBound >= wanted.upperBound,
        "fetch \(fetch) for \(wanted) of \(length) bytes")
}

// MARK: - Helpers

/// A property of the path that an input broke.
struct PathFuzzFinding: Error, CustomStringConvertible {
    var description: String
}

private func pathFuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw PathFuzzFinding(description: "path fuzz: \(message())") }
}

/// An origin that is never asked (the target plans fetches, sends none).
private struct PathFuzzNoSource: RangeSource {
    func fetch(url: String, range: Range<Int64>, validator: String?, listedBy: ListedBy, sink: any FetchSink) {
        fatalError("the path fuzz target fetched \(range) of \(url)")
    }
}

/// SplitMix64 seeded by the input's bytes: the reads an input plans are a
/// function of the input, so a crash replays.
private struct PathFuzzRandom {
    private var state: UInt64

    init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// An offset in `0...length` (the end included: reads there are empty).
    mutating func offset(in length: Int64) -> Int64 {
        guard length > 0 else { return 0 }
        return Int64(next() % (UInt64(length) + 1))
    }
}
