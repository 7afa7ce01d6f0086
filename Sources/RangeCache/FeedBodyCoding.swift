internal import CZlib

/// How a kept copy of a feed is stored: gzip (zlib at its fastest level).
///
/// A feed is text that repeats itself (show notes, markup, URLs): a copy
/// of 130 KB stores in about a tenth of that. Stored plain, a mount of
/// 1,000 feeds wrote 130 MB to the index's write-ahead log, and as much
/// again at its checkpoint, on the way to each show's listing. A copy
/// kept by an earlier podfs is plain text (XML never starts with gzip's
/// magic bytes) and is read as it is.
enum FeedBodyCoding {
    // MARK: - Static methods

    /// `body` compressed; `body` itself if zlib refuses (it has no reason to).
    static func encode(_ body: [UInt8]) -> [UInt8] {
        guard !body.isEmpty else { return body }
        var stream = z_stream()
        guard podfs_deflate_init_gzip(&stream, Z_BEST_SPEED) == Z_OK else { return body }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(body.count))))
        let result = body.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { return body }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// The feed's bytes: `stored` inflated when it is gzip, as it is
    /// otherwise. A damaged copy comes back as stored, and fails to parse
    /// where any damaged copy does (the origin's copy is then asked for).
    static func decode(_ stored: [UInt8]) -> [UInt8] {
        guard stored.count >= 18, stored[0] == 0x1f, stored[1] == 0x8b else { return stored }
        // The last four bytes are the size modulo 2^32: a first guess, no
        // more than deflate can make of the stored bytes (1,032 to 1), so a
        // damaged trailer never asks for gigabytes.
        let told = stored.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        var output = [UInt8](repeating: 0, count: min(max(told, stored.count * 4), stored.count * 1_032))
        var stream = z_stream()
        guard podfs_inflate_init_gzip(&stream) == Z_OK else { return stored }
        defer { inflateEnd(&stream) }
        var result = Z_OK
        stored.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while result == Z_OK {
                if Int(stream.total_out) == output.count { output.append(contentsOf: repeatElement(0, count: output.count)) }
                result = output.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress! + Int(stream.total_out)
                    stream.avail_out = uInt(out.count - Int(stream.total_out))
                    return inflate(&stream, Z_NO_FLUSH)
                }
                // Room ran out: grow and go on (Z_BUF_ERROR means no progress).
                if result == Z_BUF_ERROR, stream.avail_out == 0 { result = Z_OK }
            }
        }
        guard result == Z_STREAM_END, stream.avail_in == 0 else { return stored }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}
