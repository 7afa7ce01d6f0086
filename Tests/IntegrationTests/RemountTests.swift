import Foundation
import Testing

/// One mount after another on the same mount point: a daemon's exit
/// leaves the next one alone, and `podfs unmount` waits for the daemon.
@Suite(.serialized, .needsRoot)
struct RemountTests {
    /// A daemon whose mount was taken away leaves alone what is mounted on
    /// its mount point after it. The kernel gives a new mount the device
    /// number of one just gone, and a daemon that detached "its dead
    /// mount" by that number unmounted a podfs mounted there since
    /// `fusermount3 -u` returned (which does not wait for the daemon): a
    /// remount read ENOENT (mpv in bench/keep, one run in two).
    @Test func aMountRightAfterAnotherWasUnmountedStaysMounted() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [1000]))
        var daemon = try Self.mount(fixture, cache: "a")
        for round in 1...8 {
            let unmounted = try Harness.run("fusermount3", ["-u", fixture.mountpoint])
            try #require(unmounted.status == 0, "\(unmounted.stderr)")
            // Waits for the listing only after the old daemon exited: a
            // detached mount would otherwise read as one that never listed.
            let next = try Self.mount(fixture, cache: round % 2 == 0 ? "a" : "b", waitFor: .none)
            // The old daemon's exit is where it would detach.
            #expect(Harness.eventually(30) { Self.exited(daemon) }, "round \(round): the old daemon exits")
            daemon = next
            #expect(Fixture.isMounted(fixture.mountpoint), "round \(round): the new mount is still there")
            try fixture.waitUntilListed(.published)
            let copy = try Harness.run("/bin/sh", ["-c", "cat '\(fixture.path(0))' | wc -c"])
            #expect(copy.text.trimmingCharacters(in: .whitespacesAndNewlines) == "1000", "round \(round): \(copy.stderr)")
        }
        try fixture.unmount()
    }

    /// `podfs unmount` waits for the daemon to save and exit also when the
    /// program is not called podfs (a build copied aside for a benchmark):
    /// before, it found no daemon by that name and returned at once.
    @Test func unmountWaitsForTheDaemonOfARenamedProgram() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [1000]))
        let renamed = fixture.directory + "/podfs-copy"
        // cp writes the copy in a process of its own: a copy written here
        // would hold a write descriptor that a test forking at that moment
        // inherits, and the exec below would then fail with ETXTBSY.
        let copied = try Harness.run("/bin/cp", [Harness.podfs, renamed])
        try #require(copied.status == 0, "\(copied.stderr)")
        let daemon = try Self.mount(fixture, cache: "a", program: renamed)
        let unmounted = try Harness.run(renamed, ["unmount", fixture.mountpoint], timeout: 60)
        #expect(unmounted.status == 0, "\(unmounted.stderr)")
        #expect(Self.exited(daemon), "the daemon had exited when podfs unmount returned")
    }

    /// `program mount` of the fixture's feed with a cache of its own (`name`
    /// under the fixture's folder): the two caches' daemons do not wait for
    /// each other's lock. Returns the daemon's PID once the mount lists
    /// `waitFor`.
    private static func mount(
        _ fixture: Fixture, cache name: String, program: String = Harness.podfs,
        waitFor listing: Fixture.Listing = .published
    ) throws -> pid_t {
        let output = try Harness.run(
            program,
            ["mount", "--cache-dir", fixture.directory + "/cache-" + name, "\(fixture.origin.base)/feed.xml", fixture.mountpoint],
            timeout: 60)
        try #require(output.status == 0, "\(output.stderr)")
        let pid = try #require(Fixture.daemonPID(in: output.text))
        fixture.adopt(daemonPID: pid)
        try fixture.waitUntilListed(listing)
        return pid
    }

    /// Gone, or a zombie nobody reaped (a daemon is not the test's child).
    private static func exited(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.contains(") Z ")
    }
}
