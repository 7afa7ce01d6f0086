// The libFuzzer entry point of scripts/fuzz feed (only in the fuzz build: the
// unit tests call feedFuzzFinding directly). A finding is a crash here.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let finding = feedFuzzFinding(data, size) { fatalError(finding) }
    return 0
}
