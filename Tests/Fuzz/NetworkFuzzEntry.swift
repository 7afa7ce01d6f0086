// The libFuzzer entry point of scripts/fuzz network. A finding is a crash here.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let finding = networkFuzzFinding(data, size) { fatalError(finding) }
    return 0
}
