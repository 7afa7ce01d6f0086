import Testing

@testable import PodFS

/// gpodder.net's devices: which lists a mount's device does not share, and
/// what the listener is told to do about it.
@Suite struct SyncDevicesTests {
    private let phone = SyncDevices.Device(id: "antennapod-1", caption: "Pixel", subscriptions: 12)
    private let tablet = SyncDevices.Device(id: "tablet", caption: "tablet", subscriptions: 3)
    private let empty = SyncDevices.Device(id: "old", caption: "", subscriptions: 0)
    private let box = SyncDevices.Device(id: "box", caption: "podfs (box)", subscriptions: 5)

    @Test func devicesWithListsOutsideThisOnesGroupAreUnshared() {
        let all = [phone, tablet, empty, box]
        #expect(SyncDevices.unshared(by: "box", devices: all, groups: []) == [phone, tablet])
        #expect(SyncDevices.unshared(by: "box", devices: all, groups: [["box", "antennapod-1"]]) == [tablet])
        #expect(SyncDevices.unshared(by: "box", devices: all, groups: [["tablet", "antennapod-1"]]) == [phone, tablet])
        #expect(SyncDevices.unshared(by: "box", devices: [box, empty], groups: []).isEmpty)
        // The most subscribed first: the one the hint suggests.
        #expect(SyncDevices.unshared(by: "box", devices: [tablet, box, phone], groups: []) == [phone, tablet])
    }

    @Test func theHintNamesTheDevicesAndTheWaysToOneList() throws {
        #expect(SyncDevices.hint(device: "box", unshared: []) == nil)
        let hint = try #require(SyncDevices.hint(device: "box", unshared: [phone, tablet]))
        #expect(hint.contains("antennapod-1 (Pixel), 12 subscriptions; tablet, 3 subscriptions"), "\(hint)")
        #expect(hint.contains("sync_device=antennapod-1") && hint.contains("sync group"), "\(hint)")
        let many = (1...5).map { SyncDevices.Device(id: "d\($0)", caption: "", subscriptions: 1) }
        #expect(SyncDevices.hint(device: "box", unshared: many)?.contains("d3, 1 subscription and 2 more") == true)
    }

    @Test func theServersDeviceListIsReadWithoutTrustingIt() throws {
        let body = #"[{"id": "a", "caption": "A", "type": "mobile", "subscriptions": 4}, {"caption": "no id"}, "x", {"id": "b", "subscriptions": -3}]"#
        let devices = try SyncAnswer.devices(Array(body.utf8), limits: SyncLimits())
        #expect(devices == [.init(id: "a", caption: "A", subscriptions: 4), .init(id: "b", caption: "", subscriptions: 0)])
        #expect(throws: SyncAnswerError.self) { try SyncAnswer.devices(Array(#"{"id": "a"}"#.utf8), limits: SyncLimits()) }
        let groups = try SyncAnswer.syncGroups(Array(#"{"synchronized": [["a", "b"], [1]], "not-synchronized": ["c"]}"#.utf8), limits: SyncLimits())
        #expect(groups == [["a", "b"], []])
    }
}
