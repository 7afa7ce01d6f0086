/// Whether a read joins a fetch already on its way or starts one of its
/// own at once, judged by when its bytes would arrive (docs/DESIGN.md, "The
/// read path", "Join or jump").
///
/// A fetch brings its bytes in order: a read `distance` bytes beyond where
/// the fetch's body has come waits `distance / rate` for it. A request of
/// its own costs a round trip to its head, then `need / rate` for the
/// read's own bytes. The read joins when the fetch wins or ties; a player
/// that seeks twenty minutes ahead of a running stream jumps, and the
/// stream yields (`Episode.State.yield`). A reader that reads on (its read
/// lands within `ReadPlan.nearby` of where it stopped) always stays with
/// its stream: the kernel's read-ahead sends reads ahead of the bytes, and
/// a daemon slowed down (a busy machine) would otherwise cut its own stream
/// again and again, each cut wasting what the origin had already sent.
///
/// Pure function of its arguments; the rate and the round trip come from
/// `LinkEstimate`.
enum JoinOrJump {
    /// `true`: the read at `position` waits for the fetch whose body has
    /// come to `received`; `false`: it starts its own fetch now.
    ///
    /// - Parameters:
    ///   - need: bytes the read itself wants from `position`.
    ///   - following: the read lands near where its reader stopped.
    ///   - rate: body bytes per second (`LinkEstimate.throughput`).
    ///   - roundTrip: seconds from a request to its head
    ///     (`LinkEstimate.latency`).
    ///   Until both were measured, a read joins within `ReadPlan.nearby`.
    static func joins(
        position: Int64, received: Int64, need: Int64, following: Bool, rate: Double?, roundTrip: Double?
    ) -> Bool {
        guard position > received, !following else { return true }
        let distance = Double(position - received)
        guard let rate, let roundTrip, rate.isFinite, rate > 0, roundTrip.isFinite, roundTrip >= 0 else {
            return distance <= Double(ReadPlan.nearby)
        }
        // Arrival by the fetch: distance / rate. By a request of its own:
        // roundTrip + need / rate. Compared in bytes, so no division.
        let byItsOwn = rate * roundTrip + Double(max(0, need))
        return distance <= byItsOwn
    }
}
