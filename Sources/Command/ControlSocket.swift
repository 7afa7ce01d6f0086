import Foundation
import Locking
import Logging
import PodFS

/// How `podfs subscribe`, `unsubscribe` and the like reach a running mount:
/// a Unix socket in the cache directory (docs/DESIGN.md, "Subscriptions").
///
/// Only the mount's owner gets an answer: the cache directory is 0700, the
/// socket 0600, and each connection's peer is checked with `SO_PEERCRED`
/// (root is let in, as for the cache's files). One request a connection,
/// one JSON line each way.
enum ControlSocket {
    // MARK: - Nested types

    /// What a command asks of the daemon.
    struct Request: Codable, Sendable {
        /// `subscribe` or `unsubscribe`.
        var command: String
        var arguments: [String]
        /// `unsubscribe --purge`: delete the cached bytes now.
        var purge = false
    }

    /// The daemon's answer: what to print, and whether the command worked.
    struct Response: Codable, Sendable {
        var ok: Bool
        var lines: [String]
    }

    /// Why a command could not talk to a mount that is there.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: - Properties

    static let fileName = "control.sock"
    /// The largest request or answer read: a list of a few thousand URLs.
    static let limit = 4 << 20

    // MARK: - Client

    /// Sends `request` to the mount using `cacheDirectory` and waits for its
    /// answer; `nil` when no mount is listening there (the command then
    /// works on the list the next mount reads).
    static func send(_ request: Request, cacheDirectory: String) throws(Failure) -> Response? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "could not make a socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let path = cacheDirectory + "/" + fileName
        let connected = withAddress(path) { connect(fd, $0, $1) }
        guard connected == 0 else {
            if [ENOENT, ECONNREFUSED, ENOTDIR].contains(errno) { return nil }
            throw Failure(description: "could not reach the mount through \(path): \(String(cString: strerror(errno)))")
        }
        // A refusal may come before the request is taken: read it anyway.
        let encoded: [UInt8] = (try? JSONEncoder().encode(request)).map { [UInt8]($0) } ?? []
        let line = encoded + [0x0A]
        let sent = writeAll(fd, line)
        shutdown(fd, Int32(SHUT_WR))
        let answer = readLine(fd)
        guard let answer, let response = try? JSONDecoder().decode(Response.self, from: Data(answer)) else {
            throw Failure(
                description: sent
                    ? "the mount gave no answer through \(path); its log may say why"
                    : "the mount closed \(path) before it took the request; its log may say why")
        }
        return response
    }

    // MARK: - Shared helpers

    /// Calls `body` with `path` as a `sockaddr_un`. A path longer than one
    /// holds (108 bytes; a deep cache directory) is reached through its
    /// folder's descriptor, `/proc/self/fd/N/control.sock`.
    static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            let folder = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard folder >= 0 else { return -1 }
            defer { close(folder) }
            let short = "/proc/self/fd/\(folder)/" + (path as NSString).lastPathComponent
            guard short.utf8.count < capacity else {
                errno = ENAMETOOLONG
                return -1
            }
            return withAddress(short, body)
        }
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Reads up to the first newline (or the end), at most `limit` bytes;
    /// `nil` when nothing came or the line is too long.
    static func readLine(_ fd: Int32) -> [UInt8]? {
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while line.count <= limit {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            line.append(contentsOf: buffer[..<got])
            if let end = line.firstIndex(of: 0x0A) { return Array(line[..<end]) }
        }
        return line.isEmpty || line.count > limit ? nil : line
    }
}

/// The daemon's end of `ControlSocket`: a thread that accepts connections
/// and answers each on a thread of its own (a subscription fetches a feed,
/// which may take a while; the others need not wait).
final class ControlServer: Sendable {
    // MARK: - Properties

    private let path: String
    private let listener: Int32
    private let handle: @Sendable (ControlSocket.Request) -> ControlSocket.Response
    private let logger: Logger
    /// Signalled when the accepting thread has ended.
    private let ended = DispatchSemaphore(value: 0)
    private let stopping = Locked(false)
    /// Connections being answered; at most `busyLimit`.
    private let answering = Locked(0)
    /// More connections than this at once are told to try again.
    static let busyLimit = 8
    /// Seconds a connection may take to send its request.
    static let requestTimeout = 10

    // MARK: - Init

    /// Listens at `<cacheDirectory>/control.sock` (a stale socket left by a
    /// killed daemon is replaced: the cache lock says no other mount uses
    /// this cache).
    init(
        cacheDirectory: String, logger: Logger,
        handle: @escaping @Sendable (ControlSocket.Request) -> ControlSocket.Response
    ) throws(ControlSocket.Failure) {
        path = cacheDirectory + "/" + ControlSocket.fileName
        self.handle = handle
        self.logger = logger
        unlink(path)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        // The cache directory is 0700; the socket is made 0600 at once.
        let bound = listener >= 0 ? ControlSocket.withAddress(path) { bind(listener, $0, $1) } : -1
        guard bound == 0, chmod(path, 0o600) == 0, listen(listener, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            if listener >= 0 { close(listener) }
            throw ControlSocket.Failure(description: "could not listen at \(path): \(reason)")
        }
    }

    // MARK: - Methods

    func start() {
        let thread = Thread { [self] in
            FeedRound.blockTerminationSignals()
            acceptLoop()
            ended.signal()
        }
        thread.name = "podfs-control"
        thread.start()
    }

    /// Stops accepting (a request being answered finishes on its own) and
    /// removes the socket.
    func stop() {
        stopping.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        ended.wait()
        close(listener)
        unlink(path)
    }

    // MARK: - Private methods

    private func acceptLoop() {
        while !stopping.withLock({ $0 }) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if stopping.withLock({ $0 }) { break }
                // Out of descriptors or memory: say so, wait, go on.
                logger.warning(
                    "the control socket could not take a connection; trying again",
                    metadata: ["error": "\(String(cString: strerror(errno)))"])
                usleep(200_000)
                continue
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            var timeout = timeval(tv_sec: Self.requestTimeout, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let admitted = answering.withLock { count -> Bool in
                guard count < Self.busyLimit else { return false }
                count += 1
                return true
            }
            guard admitted else {
                reply(connection, .init(ok: false, lines: ["the mount is busy with other changes; try again"]))
                close(connection)
                continue
            }
            let thread = Thread { [self] in
                FeedRound.blockTerminationSignals()
                serve(connection)
                close(connection)
                answering.withLock { $0 -= 1 }
            }
            thread.name = "podfs-control-request"
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        // `struct ucred` (pid, uid, gid), which Glibc's module does not
        // bring without _GNU_SOURCE.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, UInt32.max, UInt32.max)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            credentials.uid == getuid() || credentials.uid == 0
        else {
            // Checked before anything it sent is read. (A Unix socket keeps
            // the answer readable for the peer even when its request is
            // left unread.)
            logger.warning(
                "refused a control request from another user", metadata: ["peer.uid": "\(credentials.uid)"])
            reply(connection, .init(ok: false, lines: ["only the user who mounted podfs (uid \(getuid())) may change it"]))
            return
        }
        guard let line = ControlSocket.readLine(connection), let request = try? JSONDecoder().decode(ControlSocket.Request.self, from: Data(line))
        else {
            reply(connection, .init(ok: false, lines: ["the request did not decode; is this podfs the same version as the mount?"]))
            return
        }
        reply(connection, handle(request))
    }

    private func reply(_ connection: Int32, _ response: ControlSocket.Response) {
        guard let data = try? JSONEncoder().encode(response) else { return }
        _ = ControlSocket.writeAll(connection, Array(data) + [0x0A])
    }
}
