// The libFuzzer entry point of scripts/fuzz rangeset (only in the fuzz build: the
// unit tests call rangeSetFuzzCheck directly). A finding is a crash here.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    do {
        try rangeSetFuzzCheck(data, size)
    } catch {
        fatalError(error.description)
    }
    return 0
}
