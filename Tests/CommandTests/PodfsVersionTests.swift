import Testing

@testable import podfs

/// What `podfs --version` prints: the version and the commit of the build.
@Suite struct PodfsVersionTests {
    @Test func theVersionNamesTheCommitItWasBuiltFrom() {
        #expect(PodfsVersion.describe(number: "0.1.0", commit: "1a2b3c4") == "0.1.0 (commit 1a2b3c4)")
        #expect(PodfsVersion.describe(number: "0.1.0", commit: "1a2b3c4-dirty") == "0.1.0 (commit 1a2b3c4-dirty)")
    }

    @Test func aBuildThatCouldNotTellSaysSo() {
        #expect(PodfsVersion.describe(number: "0.1.0", commit: nil) == "0.1.0 (unknown commit)")
        #expect(PodfsVersion.describe(number: "0.1.0", commit: "") == "0.1.0 (unknown commit)")
    }

    /// The tests are built from this checkout, so the plugin found a commit:
    /// seven hex digits, maybe marked dirty.
    @Test func thisBuildKnowsItsCommit() throws {
        let commit = try #require(PodfsVersion.commit, "the BuildCommit plugin found no commit in a git checkout")
        let id = commit.hasSuffix("-dirty") ? String(commit.dropLast(6)) : commit
        #expect(id.count == 7 && id.allSatisfy(\.isHexDigit), "\(commit)")
        #expect(PodfsVersion.description == "\(PodfsVersion.number) (commit \(commit))")
    }
}
