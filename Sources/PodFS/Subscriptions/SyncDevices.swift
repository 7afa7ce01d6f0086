/// gpodder.net keeps one subscription list per device; devices in one sync
/// group share theirs. A phone app registers a device of its own, so a
/// mount under another device ID sees none of the phone's shows unless the
/// two are grouped. These rules find the devices whose lists this mount's
/// device does not share, and say what to do (Nextcloud keeps one list per
/// user and has no devices).
public enum SyncDevices {
    /// A device of the account, as `GET /api/2/devices/USER.json` lists it.
    public struct Device: Sendable, Equatable {
        public var id: String
        public var caption: String
        public var subscriptions: Int

        public init(id: String, caption: String, subscriptions: Int) {
            self.id = id
            self.caption = caption
            self.subscriptions = subscriptions
        }
    }

    /// The devices with subscriptions that `device` does not share a list
    /// with: every other one, but those in a sync group with it
    /// (`GET /api/2/sync-devices/USER.json`'s "synchronized"), the one
    /// with the most subscriptions first.
    public static func unshared(by device: String, devices: [Device], groups: [[String]]) -> [Device] {
        let sharing = Set(groups.filter { $0.contains(device) }.joined())
        return devices.filter { $0.id != device && $0.subscriptions > 0 && !sharing.contains($0.id) }
            .enumerated().sorted { ($0.element.subscriptions, $1.offset) > ($1.element.subscriptions, $0.offset) }
            .map(\.element)
    }

    /// What to tell the listener about `unshared` (`nil` when there is
    /// none): the devices by ID, and the two ways to one list.
    public static func hint(device: String, unshared: [Device]) -> String? {
        guard !unshared.isEmpty else { return nil }
        let named = unshared.prefix(3).map { other in
            let caption = other.caption.isEmpty || other.caption == other.id ? "" : " (\(other.caption))"
            return "\(other.id)\(caption), \(other.subscriptions) subscription\(other.subscriptions == 1 ? "" : "s")"
        }
        let more = unshared.count > 3 ? " and \(unshared.count - 3) more" : ""
        return "this server keeps a list per device (as gpodder.net does), and this mount's device \(device) does not share "
            + "the list of \(named.joined(separator: "; "))\(more): mount with sync_device=\(unshared[0].id) to "
            + "use that list, or link the devices in one sync group on the server"
    }
}
