// The libFuzzer entry point of scripts/fuzz feed (only in the fuzz build: the
// unit tests call feedFuzzOneInput directly).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    feedFuzzOneInput(data, size)
}
