// The libFuzzer entry point of scripts/fuzz rangeset (only in the fuzz build: the
// unit tests call rangeSetFuzzOneInput directly).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    rangeSetFuzzOneInput(data, size)
}
