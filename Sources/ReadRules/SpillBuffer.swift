import RangeCache

/// Fetched bytes that could not be written to the cache (a full disk, a
/// file size limit, a failing disk), kept in memory so the readers waiting
/// for them still get the origin's bytes.
///
/// Never part of `present`, so never committed to the index: the index only
/// lists bytes on disk. Bounded: past `limit` the oldest pieces go (except
/// those a waiting reader needs) and are fetched again if read again.
/// Emptied when the episode's last file is closed or its version changes.
public struct SpillBuffer: Sendable {
    // MARK: - Nested types

    /// Consecutive bytes from `offset`.
    public struct Piece: Sendable {
        let offset: Int64
        var bytes: [UInt8]

        var range: Range<Int64> { offset..<offset + Int64(bytes.count) }
    }

    // MARK: - Properties

    /// Oldest first.
    private(set) var pieces: [Piece] = []
    /// The bytes the pieces hold (never more: a dropped piece's range is
    /// removed even if another piece also holds some of it).
    private(set) var ranges = RangeSet()
    private(set) var byteCount = 0

    /// Pieces grow by appending up to this size (a reader holding a copy
    /// makes the next append copy the piece).
    private static let pieceSize = 1024 * 1024

    var isEmpty: Bool { pieces.isEmpty }

    // MARK: - Methods

    /// Keeps `bytes` at `offset`, then drops the oldest pieces beyond
    /// `limit` bytes that do not overlap `needed`.
    mutating func add(_ bytes: UnsafeRawBufferPointer, at offset: Int64, limit: Int, needed: [Range<Int64>]) {
        guard !bytes.isEmpty else { return }
        if let last = pieces.indices.last, pieces[last].range.upperBound == offset,
            pieces[last].bytes.count + bytes.count <= Self.pieceSize
        {
            pieces[last].bytes.append(contentsOf: bytes)
        } else {
            pieces.append(Piece(offset: offset, bytes: Array(bytes)))
        }
        ranges.insert(offset..<offset + Int64(bytes.count))
        byteCount += bytes.count
        var index = 0
        while byteCount > limit, index < pieces.count {
            let range = pieces[index].range
            if needed.contains(where: { $0.overlaps(range) }) {
                index += 1
                continue
            }
            byteCount -= pieces[index].bytes.count
            ranges.remove(range)
            pieces.remove(at: index)
        }
    }

    /// The pieces holding bytes of `range` (cheap copies: arrays are shared).
    func pieces(overlapping range: Range<Int64>) -> [Piece] {
        guard !pieces.isEmpty, !ranges.intersection(range).isEmpty else { return [] }
        return pieces.filter { $0.range.overlaps(range) }
    }

    mutating func removeAll() {
        pieces = []
        ranges = RangeSet()
        byteCount = 0
    }

    /// Whether `pieces` together hold every byte of `range`.
    public static func covers(_ pieces: [Piece], _ range: Range<Int64>) -> Bool {
        var held = RangeSet()
        for piece in pieces { held.insert(piece.range) }
        return held.contains(range)
    }

    /// Copies the bytes of `range` that the pieces hold into `buffer`, which
    /// holds `range` from its start.
    public static func copy(_ pieces: [Piece], of range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) {
        for piece in pieces {
            let lower = max(piece.offset, range.lowerBound)
            let upper = min(piece.range.upperBound, range.upperBound)
            guard lower < upper else { continue }
            piece.bytes.withUnsafeBytes { source in
                let from = Int(lower - piece.offset)
                let to = Int(lower - range.lowerBound)
                let count = Int(upper - lower)
                (buffer.baseAddress! + to).copyMemory(from: source.baseAddress! + from, byteCount: count)
            }
        }
    }
}
