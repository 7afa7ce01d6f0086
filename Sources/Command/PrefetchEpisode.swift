import Foundation

/// An extended attribute's value as text, or `nil`.
///
/// libc's `getxattr(2)` wrapper is not in the Glibc module map, and this
/// executable imports no C module of its own: it is looked up once by name.
func attribute(_ path: String, _ name: String) -> String? {
    guard let getxattr = ExtendedAttributes.getxattr else { return nil }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { getxattr(path, name, $0.baseAddress, $0.count) }
    guard count >= 0 else { return nil }
    return String(decoding: buffer[0..<count], as: UTF8.self)
}

/// libc's `getxattr`, found with `dlsym`.
private enum ExtendedAttributes {
    typealias Function = @convention(c) (
        UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int
    ) -> Int
    static let getxattr: Function? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getxattr")
        .map { unsafeBitCast($0, to: Function.self) }
}

/// One episode file to read.
struct PrefetchEpisode: Sendable {
    var path: String
    /// `Show/episode file name`, as shown in the progress.
    var label: String
    var url: String
    var size: Int64
    /// The publication date (the file's mtime), seconds since the epoch.
    var published: Int64

    /// The file names a show's playlist lists (`Playlist`: one entry a
    /// line, comments starting with `#`, a name starting with `#` written
    /// `./#...`).
    static func playlistEntries(_ bytes: [UInt8]) -> Set<String> {
        var names = Set<String>()
        for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
            guard !line.hasPrefix("#"), !line.isEmpty else { continue }
            names.insert(line.hasPrefix("./") ? String(line.dropFirst(2)) : String(line))
        }
        return names
    }
}
