// The libFuzzer entry point of scripts/fuzz path (only in the fuzz build: the
// unit tests call pathFuzzOneInput directly, with an index of their own).

import Glibc
import Logging
import RangeCache

/// The cache index every input of this process is mounted with, in a
/// scratch directory of its own under `PODFS_FUZZ_SCRATCH` (which
/// scripts/fuzz makes and removes), else under /tmp.
private let pathFuzzIndex: CacheIndex = {
    let parent = getenv("PODFS_FUZZ_SCRATCH").map { String(cString: $0) } ?? "/tmp"
    var template = Array((parent + "/index-XXXXXX").utf8CString)
    guard let directory = mkdtemp(&template) else { fatalError("mkdtemp failed") }
    let logger = Logger(label: "podfs.pathfuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    do {
        return try CacheIndex(directory: String(cString: directory), logger: logger)
    } catch {
        fatalError("no cache index: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    do {
        return try pathFuzzOneInput(data, size, index: pathFuzzIndex)
    } catch {
        fatalError("\(error)")
    }
}
