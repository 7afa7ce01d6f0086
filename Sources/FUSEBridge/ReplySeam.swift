/// What a file system needs of a read's reply: bytes, a range of an open
/// file, or an error, sent once.
///
/// `DataReply` answers the kernel; tests pass their own, which records the
/// answer. A conformer answers at most once: later calls are ignored.
public protocol DataReplying: AnyObject, Sendable {
    /// Answers with `bytes` (fewer than asked only at the end of the file).
    func data(_ bytes: UnsafeRawBufferPointer)
    /// Answers with `count` bytes of the open file `descriptor` at `offset`;
    /// returns whether the data went out.
    @discardableResult
    func file(descriptor: Int32, offset: Int64, count: Int) -> Bool
    func fail(_ error: FileSystemError)
}

/// What a file system needs of an open's reply: the handle and its
/// options, or an error, sent once.
public protocol OpenReplying: AnyObject, Sendable {
    func opened(_ options: OpenOptions)
    func fail(_ error: FileSystemError)
}

extension DataReply: DataReplying {}

extension OpenReply: OpenReplying {}
