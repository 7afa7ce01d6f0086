import Foundation
import Testing

/// A killed daemon and an origin that changes a file under a reader.
@Suite(.serialized)
struct CrashAndChangeTests {
    private static let mib = 1024 * 1024

    @Test func killedDaemonLeavesAnIndexThatNeverClaimsMissingBytes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 48 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        // Slow the origin down so the kill lands mid-download.
        try fixture.origin.configure(#"{"latency_ms": 30}"#)
        try fixture.mount()
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = ["-c", "cat '\(fixture.path(0))' > /dev/null 2>&1"]
        reader.standardOutput = FileHandle.nullDevice
        reader.standardError = FileHandle.nullDevice
        try reader.run()
        Thread.sleep(forTimeInterval: 2.5)
        let pid = try #require(fixture.daemonPID)
        kill(pid, SIGKILL)
        reader.waitUntilExit()
        try Harness.sh("fusermount3 -u -z '\(fixture.mountpoint)' || true")
        // Every range the index lists must hold the origin's bytes on disk.
        let check = try Harness.run(
            "python3", [Harness.root + "/Tests/IntegrationTests/check_index.py", fixture.cacheDirectory, fixture.originPath(0)])
        #expect(check.status == 0, "index check: \(check.text) \(check.stderr)")
        try fixture.origin.configure(#"{"latency_ms": 0}"#)
        try fixture.mount()
        let copy = fixture.directory + "/copy"
        try Harness.sh("cat '\(fixture.path(0))' > '\(copy)'", timeout: 300)
        #expect(try Harness.sha256(copy) == Harness.sha256(fixture.originPath(0)))
        try fixture.unmount()
    }

    @Test func aChangedOriginNeverMixesOldAndNewBytes() throws {
        let fixture = try Fixture()
        defer { fixture.cleanup() }
        let size = 8 * Self.mib
        try fixture.publish(Fixture.episodes(sizes: [size]))
        try fixture.mount()
        let newBytes = Harness.bytes(count: size, seed: 99)
        let newFile = fixture.directory + "/new.bin"
        try newBytes.write(to: URL(fileURLWithPath: newFile))
        // One reader reads the first half, the origin changes, the reader
        // goes on: it must get old bytes or an error, never new ones.
        let script = """
            import os, sys, subprocess
            path, old, new, half = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
            old_bytes = open(old, 'rb').read()
            new_bytes = open(new, 'rb').read()
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT) if False else os.open(path, os.O_RDONLY)
            got = b''
            while len(got) < half:
                chunk = os.read(fd, 65536)
                if not chunk: break
                got += chunk
            assert got == old_bytes[:len(got)], 'first half differs from the old version'
            subprocess.run(sys.argv[5:], check=True)
            try:
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk: break
                    got += chunk
            except OSError as error:
                print('reader got', error.strerror)
            assert got == old_bytes[:len(got)], 'an open file mixed versions at %d' % len(got)
            os.close(fd)
            fresh = open(path, 'rb').read()
            assert fresh == new_bytes, 'a new open did not read the new version (%d bytes)' % len(fresh)
            print('ok', len(got))
            """
        let scriptFile = fixture.directory + "/mix.py"
        try Data(script.utf8).write(to: URL(fileURLWithPath: scriptFile))
        let output = try Harness.run(
            "python3",
            [scriptFile, fixture.path(0), fixture.originPath(0), newFile, String(size / 2),
             "curl", "-sf", "-X", "POST", "--data-binary", "@\(newFile)", "\(fixture.origin.base)/_origin/put?path=/ep1.mp3"],
            timeout: 120)
        #expect(output.status == 0, "\(output.text) \(output.stderr) log: \(fixture.log())")
        #expect(output.text.contains("ok"))
        try fixture.unmount()
    }
}
