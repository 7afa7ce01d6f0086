/// Episode keys: names for scratch files that are the same on every run and
/// every machine.
extension CacheIndex {
    // MARK: - Methods

    /// The stable key of an episode: 32 hex digits derived from the feed's URL
    /// and the episode's identity (guid, else enclosure URL). The same on every
    /// run and every machine, unlike `Hasher`.
    public static func episodeKey(feedURL: String, identity: String) -> String {
        var bytes = Array(feedURL.utf8)
        bytes.append(0)
        bytes.append(contentsOf: identity.utf8)
        let first = fnv1a64(bytes, basis: 0xcbf2_9ce4_8422_2325)
        let second = fnv1a64(bytes, basis: 0x84222325_cbf29ce4 ^ 0x9e37_79b9_7f4a_7c15)
        return hex(mix(first)) + hex(mix(second ^ first))
    }

    // MARK: - Private methods

    private static func fnv1a64(_ bytes: [UInt8], basis: UInt64) -> UInt64 {
        var hash = basis
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The splitmix64 finalizer: spreads every input bit over the output.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
