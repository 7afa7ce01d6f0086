import Foundation
import Testing

/// The harness's own promise: a child it starts inherits no descriptor of
/// the test process but its three standard ones. Suites run at once, and a
/// file one test has open in its mount, inherited by another test's
/// long-lived child (an origin), would keep that mount busy when its test
/// unmounts.
@Suite struct HarnessTests {
    @Test func aChildInheritsNoOtherDescriptor() throws {
        let file = try TempFile()
        // Without O_CLOEXEC, as Foundation and C code often open files.
        let descriptor = open(file.path, O_RDONLY)
        #expect(descriptor > 2)
        defer { close(descriptor) }
        let inherited = try Harness.run("/bin/sh", ["-c", "test -e /proc/self/fd/\(descriptor) && echo open || echo closed"])
        #expect(inherited.text == "closed\n", "\(inherited.text)")
        let own = try Harness.run("/bin/sh", ["-c", "test -e /proc/self/fd/1 && echo open || echo closed"])
        #expect(own.text == "open\n", "standard output is the child's: \(own.text)")
    }
}
