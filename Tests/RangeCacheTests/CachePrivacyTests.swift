import Foundation
import Logging
import RangeCache
import Testing

/// The cache directory is private to its owner: 0700 directories, 0600
/// files, also when it was made with looser modes.
@Suite struct CachePrivacyTests {
    private func mode(_ path: String) -> Int {
        var info = stat()
        guard lstat(path, &info) == 0 else { return -1 }
        return Int(info.st_mode & 0o7777)
    }

    private func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "CachePrivacyTests-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try body(directory)
    }

    @Test func tighteningReachesEveryEntryButNoSymbolicLinkTarget() throws {
        try withDirectory { root in
            let cache = root + "/cache"
            let outside = root + "/outside"
            try FileManager.default.createDirectory(atPath: cache + "/data/deep", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: cache + "/index.sqlite", contents: Data())
            _ = FileManager.default.createFile(atPath: cache + "/data/deep/a", contents: Data())
            _ = FileManager.default.createFile(atPath: cache + "/strict", contents: Data())
            _ = FileManager.default.createFile(atPath: outside, contents: Data())
            try FileManager.default.createSymbolicLink(atPath: cache + "/link", withDestinationPath: outside)
            for path in [cache, cache + "/data", cache + "/data/deep"] { chmod(path, 0o755) }
            for path in [cache + "/index.sqlite", cache + "/data/deep/a", outside] { chmod(path, 0o644) }
            chmod(cache + "/strict", 0o400)

            #expect(CachePrivacy.tighten(cache) == 6)
            for path in [cache, cache + "/data", cache + "/data/deep"] { #expect(mode(path) == 0o700, "\(path)") }
            for path in [cache + "/index.sqlite", cache + "/data/deep/a", cache + "/strict"] {
                #expect(mode(path) == 0o600, "\(path)")
            }
            #expect(mode(outside) == 0o644, "a link's target outside the cache is left alone")
            #expect(CachePrivacy.tighten(cache) == 0, "a second pass finds nothing to change")
            // A cache directory that is a link to another disk is followed.
            try FileManager.default.createSymbolicLink(atPath: root + "/linked", withDestinationPath: cache)
            chmod(cache, 0o755)
            #expect(CachePrivacy.tighten(root + "/linked") == 1 && mode(cache) == 0o700)
        }
    }

    @Test func anIndexMadeUnderAnOpenUmaskIsPrivate() throws {
        try withDirectory { root in
            let cache = root + "/new/cache"
            let old = umask(0o022)
            defer { umask(old) }
            let index = try CacheIndex(directory: cache, logger: Logger(label: "test"))
            try index.saveFeedBody(url: "https://example.com/f", body: [1], etag: nil, lastModified: nil, fetchedAt: 1)
            #expect(mode(cache) == 0o700 && mode(cache + "/data") == 0o700)
            for name in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
                #expect(mode(cache + "/" + name) == 0o600, "\(name)")
            }
        }
    }

    @Test func writtenFilesArePrivateEvenWhenTheyExisted() throws {
        try withDirectory { root in
            let path = root + "/cache-size"
            _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
            chmod(path, 0o644)
            #expect(CachePrivacy.writeFile(path, Array("none".utf8)) == 0)
            #expect(mode(path) == 0o600)
            #expect(FileManager.default.contents(atPath: path) == Data("none".utf8))
        }
    }

    @Test func aReplacedFileIsPrivateWholeAndLeavesNothingAside() throws {
        try withDirectory { root in
            let path = root + "/feed-moves.json"
            _ = FileManager.default.createFile(atPath: path, contents: Data("old".utf8))
            chmod(path, 0o644)
            #expect(CachePrivacy.replaceFile(path, Array("new".utf8)) == nil)
            #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
            #expect(mode(path) == 0o600)
            #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
            // A folder that is not there: the message names the file.
            let missing = CachePrivacy.replaceFile(root + "/gone/x.json", [1])
            #expect(missing?.contains(root + "/gone/x.json.tmp") == true, "\(missing ?? "nil")")
        }
    }
}
