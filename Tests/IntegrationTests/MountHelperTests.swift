import Foundation
import Testing

/// `mount -t fuse.podfs`, an fstab line and the `podfs#URL` form, through
/// the real mount(8) and mount.fuse3, after mount-helper/install.sh.
@Suite(.serialized, .needsRoot)
struct MountHelperTests {
    @Test func installedPodfsMountsThroughMountFstabAndUmount() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        try fixture.publish(Fixture.episodes(sizes: [400_000, 1000]))
        let destdir = fixture.directory + "/root"
        let install = try Harness.run(
            Harness.root + "/mount-helper/install.sh", ["--destdir", destdir, "--binary", Harness.podfs])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(FileManager.default.isExecutableFile(atPath: destdir + "/usr/local/bin/podfs"))
        let manual = try Harness.run("man", ["-l", destdir + "/usr/local/share/man/man1/podfs.1"])
        #expect(manual.text.contains("prefetch") && manual.text.contains("cache_dir="), "\(manual.stderr)")
        let uninstall = try Harness.run(
            Harness.root + "/mount-helper/install.sh", ["--destdir", fixture.directory + "/other", "--uninstall"])
        #expect(uninstall.status == 0, "\(uninstall.stderr)")

        // mount(8) runs helpers with PATH=/usr/local/sbin:/usr/local/bin:...:
        // in a private mount namespace the installed tree stands in for
        // /usr/local/bin and a test fstab for /etc/fstab.
        let feed = "\(fixture.origin.base)/feed.xml"
        let mnt = fixture.mountpoint
        let second = fixture.directory + "/fstab-mnt"
        let cache = fixture.cacheDirectory
        let file = "\(Fixture.showTitle)/2026-11-01 Episode 1.mp3"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        try Data("\(feed) \(second) fuse.podfs noauto,user,_netdev,nofail,x-systemd.automount,cache_dir=\(cache) 0 0\n".utf8)
            .write(to: URL(fileURLWithPath: fixture.directory + "/fstab"))
        let script = Fixture.shellListed + "\n" + """
            mount --bind '\(destdir)/usr/local/bin' /usr/local/bin && mount --bind '\(fixture.directory)/fstab' /etc/fstab
            # The daemon holds the cache's lock until it has saved and exits.
            gone() { flock -w 30 '\(cache)/lock' true; }
            echo "type: $(mount -t fuse.podfs -o cache_dir='\(cache)',noauto,_netdev,nofail,x-systemd.automount '\(feed)' '\(mnt)' 2>&1; echo rc=$?)"
            echo "table: $(grep -c " \(mnt) fuse.podfs " /proc/self/mounts)"
            listed '\(mnt)/\(file)'
            echo "sum: $(sha256sum '\(mnt)/\(file)')"
            echo "umount: $(umount '\(mnt)' 2>&1; echo rc=$?)"
            gone
            echo "fstab: $(mount '\(second)' 2>&1; echo rc=$?)"
            listed '\(second)/\(file)'
            echo "fstabsum: $(sha256sum '\(second)/\(file)')"
            echo "fstabumount: $(umount '\(second)' 2>&1; echo rc=$?)"
            gone
            echo "hash: $(mount -t fuse 'podfs#\(feed)' '\(mnt)' -o cache_dir='\(cache)' 2>&1; echo rc=$?)"
            listed '\(mnt)/\(Fixture.showTitle)/2026-11-02 Episode 2.mp3'
            echo "hashls: $(ls '\(mnt)/\(Fixture.showTitle)' | tr '\\n' '|')"
            echo "hashumount: $(umount '\(mnt)' 2>&1; echo rc=$?)"
            gone
            echo "left: $(grep ' \(fixture.directory)/' /proc/self/mounts | grep -c fuse.podfs)"
            """
        let output = try Harness.run("unshare", ["-m", "--propagation", "private", "sh", "-c", script], timeout: 360)
        let all = output.text + output.stderr + "\nlog:\n" + fixture.log()
        let tags: Set = [
            "type", "table", "sum", "umount", "fstab", "fstabsum", "fstabumount", "hash", "hashls", "hashumount", "left",
            "not listed",
        ]
        var lines: [String: String] = [:]
        var last = ""
        for line in output.text.split(separator: "\n") {
            if let colon = line.firstIndex(of: ":"), tags.contains(String(line[..<colon])) {
                last = String(line[..<colon])
                lines[last] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            } else {
                lines[last, default: ""] += " " + line
            }
        }
        let expected = try Harness.sha256(fixture.originPath(0))
        #expect(lines["not listed"] == nil, "the mounts list the episodes: \(all)")
        #expect(lines["type"]?.hasSuffix("rc=0") == true, "\(all)")
        #expect(lines["table"] == "1", "\(all)")
        #expect(lines["sum"]?.hasPrefix(expected) == true, "\(all)")
        #expect(lines["umount"] == "rc=0", "\(all)")
        #expect(lines["fstab"]?.hasSuffix("rc=0") == true, "\(all)")
        #expect(lines["fstabsum"]?.hasPrefix(expected) == true, "\(all)")
        #expect(lines["fstabumount"] == "rc=0", "\(all)")
        #expect(lines["hash"]?.hasSuffix("rc=0") == true, "\(all)")
        #expect(lines["hashls"]?.contains("2026-11-02 Episode 2.mp3") == true, "\(all)")
        #expect(lines["hashumount"] == "rc=0", "\(all)")
        #expect(lines["left"] == "0", "\(all)")
        // umount(8) as for any file system: each daemon saved and exited 0.
        #expect(fixture.log().components(separatedBy: "exit.status=0").count - 1 == 3, "\(all)")
    }
}
