/// A gpodder-API server holding one user's subscriptions: what the sync
/// loop talks to. The executable implements it over HTTP (`SyncClient`);
/// tests use an in-memory one.
public protocol SyncServer: Sendable {
    /// The changes since `since` (0: everything). Blocks; call off the
    /// network thread.
    func pull(since: Int64) throws(SyncError) -> ServerChanges
    /// Uploads local changes.
    func push(_ batch: SubscriptionSync.PushBatch) throws(SyncError) -> PushReceipt
    /// The account's devices whose lists this one does not share
    /// (`SyncDevices.unshared`); empty where lists are per user.
    func unsharedDevices() throws(SyncError) -> [SyncDevices.Device]
}

extension SyncServer {
    public func unsharedDevices() throws(SyncError) -> [SyncDevices.Device] { [] }
}

/// Why a sync request failed, with a message a person can act on. The
/// message never holds a password: it names the server by its redacted URL
/// and the user by name.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable code; decides whether to retry.
    public enum Code: String, Sendable {
        /// The mount options cannot work (no user in the URL, a password
        /// file too open): fix them and mount again.
        case setup
        /// 401 or 403: the password is wrong or missing.
        case unauthorized
        /// No server there (404 on the sync path): a wrong URL, or the
        /// Nextcloud app is not installed.
        case notFound
        /// Could not connect, or the connection broke.
        case unreachable
        /// 5xx or 429: the server is there but not answering now.
        case unavailable
        /// The server answered something podfs refuses to read.
        case badAnswer
        /// Any other status.
        case refused
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the next round may succeed without the user doing anything.
    public var isTransient: Bool {
        switch code {
        case .unreachable, .unavailable: return true
        case .setup, .unauthorized, .notFound, .badAnswer, .refused: return false
        }
    }

    public var description: String { message }
}
