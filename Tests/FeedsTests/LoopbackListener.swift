import Glibc

/// A TCP socket listening on 127.0.0.1 that nobody is meant to connect to:
/// tests hand its URL to the parser and then check that no connection
/// arrived. The kernel completes a connection into the backlog even before
/// `accept`, so a non-blocking `accept` sees any attempt.
final class LoopbackListener {
    // MARK: - Properties

    /// `http://127.0.0.1:<port>`.
    let baseURL: String

    private let descriptor: Int32

    // MARK: - Init and deinit

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw ListenerError(step: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ListenerError(step: "bind")
        }
        self.descriptor = descriptor
        self.baseURL = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    deinit {
        close(descriptor)
    }

    // MARK: - Methods

    /// How many connections arrived so far (accepting and closing them).
    func connectionCount() -> Int {
        var count = 0
        while true {
            let client = accept(descriptor, nil, nil)
            guard client >= 0 else { return count }
            close(client)
            count += 1
        }
    }
}

/// A listener that could not be set up.
struct ListenerError: Error {
    var step: String
}
