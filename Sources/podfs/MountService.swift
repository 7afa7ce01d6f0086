import FUSEBridge
import Feeds
import Foundation
import HTTPClient
import Logging
import PodFS
import RangeCache

/// The composition root: wires the cache, the HTTP client, the catalogue,
/// the reader and the FUSE session, serves, and tears down in order.
struct MountService {
    /// How a background child tells its parent it is ready.
    enum Readiness {
        case none
        case pipe
    }

    let sources: [String]
    let mountpoint: String
    let cacheDirectory: String
    let fuseOptions: [String]
    let feedLimit: Int
    let commitInterval: Double
    let revalidateAfter: Double
    let logLevel: Logger.Level
    let readiness: Readiness

    /// Mounts and serves until unmounted; returns the exit status.
    func run() -> Int32 {
        if readiness == .pipe { setsid() }
        // Start from a clean signal state whatever the parent left us (a
        // blocked SIGTERM would make unmount-by-signal hang); threads
        // created from here inherit it.
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
        signal(SIGPIPE, SIG_IGN)
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = logLevel
            return handler
        }
        let logger = Logger(label: "podfs")
        do {
            return try serve(logger: logger)
        } catch {
            logger.error("\(error)")
            report("error: \(error)")
            return 1
        }
    }

    private func serve(logger: Logger) throws -> Int32 {
        let lock = try CacheLock(directory: cacheDirectory)
        defer { lock.release() }
        let index = try CacheIndex(directory: cacheDirectory, logger: logger)
        let client = HTTPClient(logger: logger)
        let source = CurlSource(client: client, feedLimit: feedLimit)
        let feedURLs = try resolveSources()
        let loader = FeedLoader(source: source, index: index, logger: logger)
        var feeds: [(url: String, feed: ParsedFeed)] = []
        var failures: [String] = []
        for url in feedURLs {
            switch loader.load(url: url) {
            case .fresh(let feed), .cached(let feed, _):
                feeds.append((url: url, feed: feed))
            case .failed(let reason):
                logger.error("feed left out", metadata: ["feed.url": "\(url)", "reason": "\(reason)"])
                failures.append("\(url): \(reason)")
            }
        }
        if feeds.isEmpty {
            client.shutdown()
            throw MountError(
                "no feed could be loaded and none is cached:\n  " + failures.joined(separator: "\n  ")
                    + "\nCheck the URL and the network, then mount again.")
        }
        let catalog = try Catalog(feeds: feeds, index: index, logger: logger)
        var tuning = EpisodeReader.Tuning()
        tuning.revalidateAfter = revalidateAfter
        let reader = EpisodeReader(index: index, source: source, logger: logger, tuning: tuning)
        let fileSystem = PodFileSystem(catalog: catalog, reader: reader, logger: logger)
        let session = try FUSESession(
            mountpoint: mountpoint, fileSystemName: "podfs", options: fuseOptions,
            fileSystem: fileSystem, logger: logger)
        reader.attach(invalidator: session)
        reader.startFlushing(interval: commitInterval)
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)", "cache": "\(cacheDirectory)"])
        for failure in failures { report("warning: left out \(failure)") }
        report("ready")
        if readiness == .pipe {
            // Nothing more for the parent: detach stdout from its pipe.
            let devNull = open("/dev/null", O_WRONLY)
            dup2(devNull, STDOUT_FILENO)
            close(devNull)
        }
        let status = session.serve()
        logger.info("unmounting: saving the cache index")
        client.shutdown()
        reader.stopFlushing()
        index.checkpoint()
        session.close()
        logger.info("stopped")
        return status == 0 ? 0 : 1
    }

    /// Feed URLs from the SOURCE arguments (URLs, OPML files, URL lists).
    private func resolveSources() throws -> [String] {
        var urls: [String] = []
        for source in sources {
            let lowered = source.lowercased()
            if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
                urls.append(source)
                continue
            }
            guard let data = FileManager.default.contents(atPath: source) else {
                throw MountError("SOURCE \(source) is neither an http(s) URL nor a readable file")
            }
            do {
                urls.append(contentsOf: try SourceList.parse(Array(data)))
            } catch {
                throw MountError("SOURCE \(source) is not an OPML file or a list of URLs: \(error.message)")
            }
        }
        var seen = Set<String>()
        return urls.filter { seen.insert($0).inserted }
    }

    private func report(_ line: String) {
        guard readiness == .pipe else {
            if line.hasPrefix("warning") || line.hasPrefix("error") {
                FileHandle.standardError.write(Data("podfs: \(line)\n".utf8))
            }
            return
        }
        FileHandle.standardOutput.write(Data((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }
}

/// One process at a time uses a cache directory: a remount waits here for
/// the previous daemon to finish saving its index.
final class CacheLock {
    private var descriptor: Int32

    init(directory: String, wait: Double = 20) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw MountError("cannot open \(path): \(String(cString: strerror(errno))); check the cache directory's permissions")
        }
        let deadline = Date().addingTimeInterval(wait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard Date() < deadline else {
                close(descriptor)
                throw MountError(
                    "another podfs process is using the cache directory \(directory); unmount it first "
                        + "or give this mount its own --cache-dir")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }
}
