import Testing

@testable import PodFS
@testable import ReadRules

/// Inode numbers any program can keep (docs/DESIGN.md, "What a mount
/// shows"): unique in their low 32 bits, the same across mounts.
@Suite struct InodeNumberTests {
    @Test func theLow32BitsOfEveryNodeDiffer() {
        var seen: [UInt32: String] = [UInt32(truncatingIfNeeded: Catalog.rootInode): "root"]
        seen[UInt32(truncatingIfNeeded: ControlFiles.directoryInode)] = ".podfs"
        seen[UInt32(truncatingIfNeeded: Catalog.latestPlaylistInode)] = "Latest.m3u"
        let ids: [Int64] = Array(1...2000) + [65_535, 65_536, 1 << 24, (1 << 30) - 1]
        for id in ids {
            for kind in [Catalog.InodeKind.show, .episode, .playlist] {
                let low = UInt32(truncatingIfNeeded: Catalog.inode(kind, id: id))
                #expect(seen[low] == nil, "\(kind) \(id) has the low 32 bits of \(seen[low] ?? "")")
                seen[low] = "\(kind) \(id)"
            }
        }
        // Show 1 was 1 << 40 | 1: the root's number in 32 bits (MPD took it
        // for a loop and skipped the show).
        #expect(UInt32(truncatingIfNeeded: Catalog.inode(.show, id: 1)) != 1)
    }

    @Test func aShowListedByAnEarlierPodfsKeepsItsNumberAsThisOneGivesIt() {
        let saved: UInt64 = (1 << 40) | 7
        #expect(Catalog.currentInode(ofSaved: saved) == Catalog.inode(.show, id: 7))
        #expect(Catalog.currentInode(ofSaved: Catalog.inode(.show, id: 7)) == Catalog.inode(.show, id: 7))
    }

    @Test func aDamagedIndexIdNeverTrapsAndKeepsItsKind() {
        // Wrong numbers, never a trap; the kind stays in the two low bits,
        // so a damaged id cannot make an episode look like the root or a
        // show.
        for id: Int64 in [-1, .max, .min] {
            let inode = Catalog.inode(.episode, id: id)
            #expect(inode & 3 == Catalog.InodeKind.episode.rawValue)
            #expect(inode != Catalog.rootInode)
        }
        #expect(Catalog.inode(.episode, id: -1) == UInt64.max & ~1, "-1's bits shifted, the kind set")
    }
}
