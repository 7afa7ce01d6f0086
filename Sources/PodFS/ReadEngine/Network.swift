import Locking
import ReadRules

/// The reader's side of the network: where requests go (`RangeSource`),
/// what the way to the origin has shown (round trip and rate, which size
/// read-ahead) and the listeners' fetches on it, which the cache's own
/// downloads give way to (docs/DESIGN.md, "Offline by policy").
final class Network: Sendable {
    let source: any RangeSource
    /// Round trip and rate seen on the way to each origin host.
    let estimates = Locked(LinkEstimates())
    /// Readers' fetches on the network.
    let foreground = ForegroundLoad()

    init(source: any RangeSource) {
        self.source = source
    }
}
