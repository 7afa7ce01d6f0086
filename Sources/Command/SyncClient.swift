import Feeds
import Foundation
import HTTPClient
import Locking
import Logging
import PodFS

/// Talks to one gpodder-API server (gpodder.net API v2 or Nextcloud
/// GPodderSync) over `HTTPClient`, with HTTP Basic on every request.
///
/// gpodder.net also offers a session cookie (`/api/2/auth/USER/login.json`);
/// podfs does not use it: Basic on each request is what the API documents
/// for every call, what Nextcloud takes, and it keeps no session to expire.
///
/// Every failure is a `SyncError` naming the server by its redacted URL and
/// the user by name; the password is in no message and no log line (it goes
/// to libcurl as an option, never in a URL). Answers are capped at
/// `answerLimit` bytes and read by `SyncAnswer`, which trusts no type.
final class SyncClient: SyncServer {
    // MARK: - Properties

    /// The largest answer read: 5,000 URLs of 200 bytes in each list fit
    /// with room to spare.
    static let answerLimit = 8 << 20
    /// The largest `status.php` answer read when probing the layout.
    static let probeLimit = 64 << 10

    /// The account it syncs (`SyncEndpoint.account`).
    let account: (key: String, shown: String)

    private let client: HTTPClient
    private let reading: SyncEndpoint.Reading
    private let credentials: HTTPCredentials
    private let limits: SyncLimits
    private let logger: Logger
    /// The endpoint once known (at once, or after the first probe).
    private let endpoint = Locked<SyncEndpoint?>(nil)
    /// The zone of the address the server answered from last: URLs it
    /// lists are fetched under it, as a feed's are.
    private let zone = Locked<AddressZone?>(nil)

    // MARK: - Init

    /// Reads the options; throws a `.setup` error the user can act on (no
    /// user in the URL, a password file others may read).
    init(
        url: String, device: String, passwordFile: String?, client: HTTPClient, limits: SyncLimits = SyncLimits(),
        logger: Logger
    ) throws(SyncError) {
        let reading = try SyncEndpoint.read(url, device: device)
        let user: String
        switch reading {
        case .known(let endpoint):
            user = endpoint.user
            self.endpoint.withLock { $0 = endpoint }
        case .probe(_, let gpodder, _):
            user = gpodder.user
        }
        if let passwordFile {
            credentials = .basic(user: user, password: try SyncPassword.read(path: passwordFile))
        } else {
            credentials = .netrc(user: user)
        }
        self.reading = reading
        account = SyncEndpoint.account(of: reading)
        self.client = client
        self.limits = limits
        self.logger = logger
    }

    // MARK: - Methods

    /// The zone the server last answered from; `nil` before any answer.
    var serverZone: AddressZone? { zone.withLock { $0 } }

    func pull(since: Int64) throws(SyncError) -> ServerChanges {
        let endpoint = try resolved()
        let body: [UInt8]
        do {
            body = try send(HTTPRequest(url: endpoint.pullURL(since: since)), to: endpoint)
        } catch let error where error.code == .notFound {
            // gpodder.net answers a pull for a device it never met with
            // 404 (only an upload makes one): the device is made, then
            // asked again. A server with no such API answers 404 again.
            guard let deviceURL = endpoint.deviceURL else { throw error }
            try register(at: deviceURL, endpoint)
            body = try send(HTTPRequest(url: endpoint.pullURL(since: since)), to: endpoint)
        }
        do {
            return try SyncAnswer.changes(body, limits: limits)
        } catch {
            throw badAnswer(error, from: endpoint)
        }
    }

    func push(_ batch: SubscriptionSync.PushBatch) throws(SyncError) -> PushReceipt {
        let endpoint = try resolved()
        let json: Data
        do {
            json = try JSONSerialization.data(withJSONObject: ["add": batch.add, "remove": batch.remove])
        } catch {
            throw SyncError(.setup, "podfs could not write its changes as JSON")
        }
        let request = HTTPRequest(
            url: endpoint.pushURL, headers: [(name: "Content-Type", value: "application/json")], body: Array(json))
        let body = try send(request, to: endpoint)
        do {
            return try SyncAnswer.receipt(body, limits: limits)
        } catch {
            throw badAnswer(error, from: endpoint)
        }
    }

    func unsharedDevices() throws(SyncError) -> [SyncDevices.Device] {
        let endpoint = try resolved()
        guard let urls = endpoint.deviceListURLs else { return [] }
        let body = try send(HTTPRequest(url: urls.devices), to: endpoint)
        let devices: [SyncDevices.Device]
        do {
            devices = try SyncAnswer.devices(body, limits: limits)
        } catch {
            throw badAnswer(error, from: endpoint)
        }
        // A server without sync groups (an older one) groups nothing.
        let groups = (try? send(HTTPRequest(url: urls.groups), to: endpoint))
            .flatMap { try? SyncAnswer.syncGroups($0, limits: limits) } ?? []
        return SyncDevices.unshared(by: endpoint.device, devices: devices, groups: groups)
    }

    // MARK: - Private methods

    /// Makes this device on a gpodder.net server, named so that the user
    /// knows it among their devices (the web page's list, a phone app's
    /// "sync with" choice).
    private func register(at url: String, _ endpoint: SyncEndpoint) throws(SyncError) {
        let settings = ["caption": "podfs (\(endpoint.device))", "type": "server"]
        guard let json = try? JSONSerialization.data(withJSONObject: settings) else {
            throw SyncError(.setup, "podfs could not write its device as JSON")
        }
        let request = HTTPRequest(
            url: url, headers: [(name: "Content-Type", value: "application/json")], body: Array(json))
        _ = try send(request, to: endpoint)
        logger.info(
            "made this device on the sync server",
            metadata: ["sync.server": "\(endpoint.shown)", "sync.device": "\(endpoint.device)"])
    }

    /// The endpoint, probing the layout once when the URL leaves it open.
    private func resolved() throws(SyncError) -> SyncEndpoint {
        if let known = endpoint.withLock({ $0 }) { return known }
        guard case .probe(let statusURL, let gpodder, let nextcloud) = reading else {
            preconditionFailure("a known endpoint is stored at init")
        }
        let response: HTTPResponse
        do {
            response = try client.fetchAll(
                HTTPRequest(url: statusURL, connectTimeout: 10, totalTimeout: 20), limit: Self.probeLimit)
        } catch let error where error.kind == .tooLarge {
            return settle(gpodder)
        } catch {
            throw transferFailure(error, from: gpodder)
        }
        let isNextcloud = SyncEndpoint.isNextcloudStatus(status: response.head.status, body: response.body)
        return settle(isNextcloud ? nextcloud : gpodder)
    }

    private func settle(_ found: SyncEndpoint) -> SyncEndpoint {
        logger.info(
            "the sync server's layout", metadata: ["sync.server": "\(found.shown)", "sync.layout": "\(found.layout)"])
        endpoint.withLock { $0 = found }
        return found
    }

    /// Sends `request` with the credentials; the body of a 2xx answer.
    private func send(_ base: HTTPRequest, to endpoint: SyncEndpoint) throws(SyncError) -> [UInt8] {
        var request = base
        request.credentials = credentials
        request.headers.append((name: "Accept", value: "application/json"))
        request.connectTimeout = 15
        request.totalTimeout = 60
        let response: HTTPResponse
        do {
            response = try client.fetchAll(request, limit: Self.answerLimit)
        } catch {
            throw transferFailure(error, from: endpoint)
        }
        if let connected = response.head.connectedZone { zone.withLock { $0 = connected } }
        let status = response.head.status
        switch status {
        case 200..<300:
            return response.body
        case 401, 403:
            let source: String
            switch credentials {
            case .basic: source = "check sync_password_file"
            case .netrc: source = "give sync_password_file=FILE, or check the ~/.netrc entry for its host"
            }
            throw SyncError(
                .unauthorized,
                "the sync server \(endpoint.shown) refused the user \(endpoint.user)'s password (HTTP \(status)): \(source)")
        case 404:
            switch endpoint.layout {
            case .gpodder:
                throw SyncError(
                    .notFound,
                    "the sync server \(endpoint.shown) has no gpodder API for user \(endpoint.user) (HTTP 404): check "
                        + "the sync URL and the user name")
            case .nextcloud:
                throw SyncError(
                    .notFound,
                    "the Nextcloud at \(endpoint.shown) answers 404 for GPodderSync: install the GPodderSync app, "
                        + "or check the sync URL")
            }
        case 429, 500..<600:
            throw SyncError(
                .unavailable, "the sync server \(endpoint.shown) answered HTTP \(status); podfs will try again later")
        default:
            throw SyncError(.refused, "the sync server \(endpoint.shown) answered HTTP \(status)")
        }
    }

    private func transferFailure(_ error: HTTPError, from endpoint: SyncEndpoint) -> SyncError {
        switch error.kind {
        case .tooLarge:
            return SyncError(
                .badAnswer,
                "the sync server \(endpoint.shown) sent an answer larger than \(Self.answerLimit >> 20) MiB; "
                    + "podfs stopped reading it and applied nothing")
        case .unreachable, .interrupted:
            return SyncError(
                .unreachable,
                "could not reach the sync server \(endpoint.shown): \(error.message); podfs will try again later")
        case .refused, .cancelled, .other:
            return SyncError(.refused, "the request to the sync server \(endpoint.shown) failed: \(error.message)")
        }
    }

    private func badAnswer(_ error: SyncAnswerError, from endpoint: SyncEndpoint) -> SyncError {
        SyncError(
            .badAnswer,
            "the sync server \(endpoint.shown) sent an answer podfs refuses: \(error.message); nothing was applied")
    }
}
