import Foundation
import FUSEBridge
import Logging
import RangeCache
import ReadRules

/// The one place that answers reads: from the scratch file (spliced
/// straight from its page cache when it can), from memory where the disk
/// could not take the bytes, or from a chunk still on its way to the disk.
extension EpisodeReader {
    // MARK: - Nested types

    /// How a read is answered.
    enum ReadAnswer {
        /// EIO: the bytes cannot be had (offline, a replaced version, a
        /// failed fetch).
        case eio
        /// No bytes: the read starts at or past the end.
        case empty
        /// `range` from the scratch file and the bytes `spilled` to memory.
        case cached(Range<Int64>, ScratchFile?, spilled: [SpillBuffer.Piece])
        /// `range`, partly in `chunk` (its first `count` bytes, which belong
        /// at `offset`), the rest in the scratch file of `generation`, the
        /// version the read was decided on.
        case arriving(Range<Int64>, BodyChunk, count: Int, at: Int64, generation: UInt64)
    }

    // MARK: - Methods

    /// Answers `reply` as `answer` says; never under a lock.
    func answer(_ token: Episode.ReadToken, with answer: ReadAnswer, episode: Episode) {
        let reply = token.reply
        switch answer {
        case .eio:
            reply.fail(.ioError)
        case .empty:
            reply.data(UnsafeRawBufferPointer(start: nil, count: 0))
        case .cached(let range, let scratch, let spilled):
            serve(range, from: scratch, spilled: spilled, episode: episode, reply: reply)
        case .arriving(let range, let chunk, let count, let offset, let generation):
            self.answer(reply, range, from: chunk, count: count, at: offset, generation: generation, episode: episode)
        }
    }

    // MARK: - Private methods

    /// Reads `range` from the scratch file, and the parts of it that are
    /// only in memory from `spilled`, and answers.
    private func serve(
        _ range: Range<Int64>, from scratch: ScratchFile?, spilled: [SpillBuffer.Piece] = [], episode: Episode,
        reply: any DataReplying
    ) {
        guard scratch != nil || SpillBuffer.covers(spilled, range) else {
            // Debug: a file that cannot be made is logged once where it
            // failed (`DiskSpace.writeFailed`); this says which reads it cost.
            logger.debug(
                "a read of cached bytes found no cache file (it could not be opened or was replaced); the read failed with EIO",
                metadata: ["episode.key": "\(episode.key)", "range": "\(range)"])
            reply.fail(.ioError)
            return
        }
        let count = Int(range.count)
        if spilled.isEmpty, let scratch {
            // Straight from the file's page cache into the kernel's reply.
            if !reply.file(descriptor: scratch.fileDescriptor, offset: range.lowerBound, count: count) {
                logger.error(
                    "could not read the cache file; the read failed with EIO",
                    metadata: ["episode.key": "\(episode.key)", "path": "\(scratch.path)"])
            }
            return
        }
        let whole = io.readBuffers.take(atLeast: count)
        defer { io.readBuffers.give(whole) }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[0..<count])
        do {
            var got = try scratch?.read(into: buffer, at: range.lowerBound) ?? 0
            if !spilled.isEmpty {
                // The caller saw `range` covered by disk and memory together.
                SpillBuffer.copy(spilled, of: range, into: buffer)
                got = count
            }
            reply.data(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
        } catch {
            logger.error("could not read the cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            reply.fail(.ioError)
        }
    }

    /// Answers with `range`, whose bytes are in `chunk` (its first `count`
    /// bytes, which belong at `offset`) or, outside it, present in the
    /// scratch file.
    private func answer(
        _ reply: any DataReplying, _ range: Range<Int64>, from chunk: BodyChunk, count: Int, at offset: Int64,
        generation: UInt64, episode: Episode
    ) {
        let inChunk = max(range.lowerBound, offset)..<min(range.upperBound, offset + Int64(count))
        if inChunk == range {
            let start = Int(range.lowerBound - offset)
            reply.data(UnsafeRawBufferPointer(rebasing: chunk.bytes[start..<start + Int(range.count)]))
            return
        }
        let scratch = scratchFile(of: episode, generation: generation)
        guard let scratch, !inChunk.isEmpty else {
            serve(range, from: scratch, episode: episode, reply: reply)
            return
        }
        let whole = io.readBuffers.take(atLeast: Int(range.count))
        defer { io.readBuffers.give(whole) }
        let buffer = UnsafeMutableRawBufferPointer(rebasing: whole[0..<Int(range.count)])
        do {
            // Before the chunk and after it: on disk already.
            let head = Int(inChunk.lowerBound - range.lowerBound)
            if head > 0 {
                let got = try scratch.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<head]), at: range.lowerBound)
                guard got == head else { throw FileError(operation: "pread", path: scratch.path, errno: 5 /* EIO: the file is shorter than the index says */) }
            }
            let middle = Int(inChunk.count)
            let chunkStart = Int(inChunk.lowerBound - offset)
            UnsafeMutableRawBufferPointer(rebasing: buffer[head..<head + middle])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunk.bytes[chunkStart..<chunkStart + middle]))
            let tail = Int(range.count) - head - middle
            if tail > 0 {
                let got = try scratch.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[(head + middle)...]), at: inChunk.upperBound)
                guard got == tail else { throw FileError(operation: "pread", path: scratch.path, errno: 5 /* EIO: the file is shorter than the index says */) }
            }
            reply.data(UnsafeRawBufferPointer(buffer))
        } catch {
            logger.error("could not read the cache file", metadata: ["episode.key": "\(episode.key)", "error": "\(error)"])
            reply.fail(.ioError)
        }
    }
}
