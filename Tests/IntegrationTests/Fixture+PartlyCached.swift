import Foundation
import Testing

extension Fixture {
    /// One episode of `size` bytes published and mounted with a commit and
    /// a revalidation each second, its first MiB read and committed: a
    /// complete episode is kept as it is until the feed changes it, so
    /// only a partly cached one is asked again when the origin changes it.
    func mountWithItsFirstMebibyteCommitted(size: Int) throws {
        try publish(Fixture.episodes(sizes: [size]))
        try mount(extra: ["--commit-interval", "1", "--revalidate-after", "1"])
        try Harness.sh("dd if='\(path(0))' of=/dev/null bs=64k count=16 2>/dev/null")
        #expect(Harness.eventually(30) {
            ((try? CacheStatus(self.cacheDirectory).cached[self.name(0)]) ?? 0) >= 1024 * 1024
        }, "part of the old version is cached and committed")
    }
}
