/// Whether a read joins a fetch already on its way or starts one of its
/// own at once, judged by when its bytes would arrive (docs/DESIGN.md, "The
/// read path", "Join or jump").
///
/// A fetch brings its bytes in order: a read `distance` bytes beyond where
/// the fetch's body has come waits `distance / rate` for it. A request of
/// its own costs a round trip to its head, then `need / rate` for the
/// read's own bytes. The read joins unless its own request wins by
/// `worthwhileGain` (a jump wastes what the fetch has in flight); a player
/// that seeks twenty minutes ahead of a running stream jumps, and the
/// stream yields (`EpisodeRules.State.yield`). A reader that reads on (its read
/// lands within `ReadPlan.nearby` of where it stopped) always stays with
/// its stream: the kernel's read-ahead sends reads ahead of the bytes, and
/// a daemon slowed down (a busy machine) would otherwise cut its own stream
/// again and again, each cut wasting what the origin had already sent.
///
/// A fetch that has brought nothing for a while (`silence`: the origin or
/// the link holds it back) is expected to stay silent about as long again:
/// its bytes arrive after `silence + distance / rate`. A stream silent for
/// longer than a round trip therefore loses to a request of the read's own,
/// however close its bytes are (once that beats a request of its own by
/// `worthwhileGain`). Its average rate alone would still look
/// fast right after a fast start, and a read that joined it would wait for
/// as long as the hold lasts; a read that joined before the silence began
/// is judged again while it waits (`EpisodeRules.State.recheckDue`).
///
/// Pure function of its arguments; the rate and the round trip come from
/// `LinkEstimate`.
public enum JoinOrJump: Sendable {
    /// `true`: the read at `position` waits for the fetch whose body has
    /// come to `received`; `false`: it starts its own fetch now.
    ///
    /// - Parameters:
    ///   - need: bytes the read itself wants from `position`.
    ///   - following: the read lands near where its reader stopped.
    ///   - rate: body bytes per second (`LinkEstimate.throughput`).
    ///   - roundTrip: seconds from a request to its head
    ///     (`LinkEstimate.latency`).
    ///   - silence: seconds since the fetch last brought a byte (0 when it
    ///     is flowing).
    ///   Until both were measured, a read joins within `ReadPlan.nearby`
    ///   a fetch silent for no longer than `quietSilence`.
    static func joins(
        position: Int64, received: Int64, need: Int64, following: Bool, rate: Double?, roundTrip: Double?,
        silence: Double = 0
    ) -> Bool {
        guard position > received, !following else { return true }
        let distance = Double(position - received)
        let silence = silence.isFinite ? max(0, silence) : .infinity
        guard let rate, let roundTrip, rate.isFinite, rate > 0, roundTrip.isFinite, roundTrip >= 0 else {
            return distance <= Double(ReadPlan.nearby) && silence <= quietSilence
        }
        // Arrival by the fetch: silence + distance / rate. By a request of
        // its own: roundTrip + need / rate, and it must win by
        // `worthwhileGain`. Compared in bytes, so no division.
        let byTheFetch = rate * silence + distance
        let byItsOwn = rate * (roundTrip + worthwhileGain) + Double(max(0, need))
        return byTheFetch <= byItsOwn
    }

    /// Whether a second whole stream, from byte 0, brings the bytes at
    /// `position` (to `position + need`) sooner than the stream whose body
    /// has come to `received` (an unstable episode's, which no ranged
    /// request can help: it would be another variant). The stream takes
    /// `silence + distance / streamRate`; a new one a round trip, then
    /// every byte up to the read's end at the link's `rate`. `false` until
    /// the link was measured, and for a stream silent for less than
    /// `stalledStream`: replacing the variant fails the reads of files open
    /// on it, which a hiccup of the link is not worth.
    static func secondStreamSooner(
        position: Int64, received: Int64, need: Int64, streamRate: Double?, silence: Double, rate: Double?,
        roundTrip: Double?
    ) -> Bool {
        guard position > received, silence >= stalledStream, let rate, let roundTrip, rate.isFinite, rate > 0,
            roundTrip.isFinite, roundTrip >= 0
        else { return false }
        let flowing = streamRate.map { $0.isFinite && $0 > 0 ? $0 : rate } ?? rate
        let byTheStream = max(0, silence) + Double(position - received) / flowing
        let bySecond = roundTrip + Double(position + max(0, need)) / rate
        return bySecond < byTheStream
    }

    /// How long a read that jumped and waits for a fetch not its own waits
    /// before it is judged again (`EpisodeRules.State.recheckDue`): twice what a
    /// request of its own would take, within 0.1-1 s (0.25 s until the link
    /// was measured). By then a flowing fetch has brought it; a fetch
    /// silent as long is judged again until it loses to a request of its
    /// own (once that wins by `worthwhileGain`).
    static func recheckDelay(need: Int64, rate: Double?, roundTrip: Double?) -> Double {
        guard let rate, let roundTrip, rate.isFinite, rate > 0, roundTrip.isFinite, roundTrip >= 0 else {
            return quietSilence
        }
        let own = roundTrip + Double(max(0, need)) / rate
        return min(1, max(0.1, 2 * own))
    }

    /// The shortest silence after which an unstable episode's stream may
    /// be replaced by a second one (`secondStreamSooner`); a connection
    /// silent for 30 s is dropped and tried again anyway.
    static let stalledStream = 5.0

    /// How much sooner a request of its own must bring a read's bytes
    /// than the fetch already on its way, in seconds, for the read to
    /// jump. The fetch it leaves yields, and what that fetch has in flight
    /// (the bytes between the origin and us: a round trip's worth, and
    /// socket buffers of several MiB on a fast link) crosses the network
    /// for nothing. On a fast link a few milliseconds either way are the
    /// machine's scheduling, not the link: eight readers sharing the
    /// kernel's page cache jumped 1.5 MiB ahead of a stream to save 4 ms,
    /// and the cuts cost the origin up to 1.07 x the episode.
    static let worthwhileGain = 0.1

    /// With the link not measured yet: the longest silence a fetch may
    /// have and still be joined, and the wait before a read that jumped is
    /// judged again.
    static let quietSilence = 0.25
}
