import Foundation

/// A mount returns once it is ready, which for a first mount is when its
/// feeds are in or after a short deadline: on a loaded machine a feed may
/// come later. Mounts in the tests therefore wait, polling with a deadline,
/// until what they expect is listed, and fail saying what is not.
extension Fixture {
    // MARK: - Nested types

    /// What a mount waits to see listed before it returns.
    enum Listing {
        /// The show's folder and the episode files `publish` put in the feed.
        case published
        /// These paths, relative to the mount point: a show's folder, a
        /// file in it.
        case paths([String])
        /// Nothing past `podfs mount` returning: for feeds that are not
        /// meant to load, and for tests of what a mount shows the moment
        /// it returns.
        case none
    }

    // MARK: - Properties

    /// How long a mount may take to list what its feeds publish: far more
    /// than a feed needs on a loaded machine, so that only a mount that
    /// never lists it fails.
    static let listingDeadline: Double = 60

    /// Shell lines that define `listed PATH [USER]`, for mounts made in a
    /// script: waits, polling until `listingDeadline` has passed, until
    /// PATH exists (looked at as USER), and prints "not listed: PATH" if it
    /// never does.
    static var shellListed: String {
        """
        listed() {
          end=$(( $(date +%s) + \(Int(listingDeadline)) ))
          while :; do
            if [ -n "$2" ]; then runuser -u "$2" -- test -e "$1"; else test -e "$1"; fi && return 0
            [ "$(date +%s)" -lt "$end" ] || break
            sleep 0.1
          done
          echo "not listed: $1"
        }
        """
    }

    // MARK: - Methods

    /// Waits until the mount lists `listing`; throws, naming what is not
    /// listed, when `listingDeadline` passes first.
    func waitUntilListed(_ listing: Listing) throws {
        let paths: [String]
        switch listing {
        case .published:
            guard !publishedPaths.isEmpty else {
                throw HarnessError(
                    "a mount waits for what publish() published, but nothing was: pass waitFor: .paths or .none")
            }
            paths = publishedPaths
        case .paths(let given):
            paths = given
        case .none:
            return
        }
        do {
            try Self.waitUntilListed(paths, in: mountpoint)
        } catch let error as HarnessError {
            let tail = log().split(separator: "\n").suffix(20).joined(separator: "\n")
            throw HarnessError("\(error.description)\nlog (last lines):\n\(tail)")
        }
    }

    /// Waits until every path of `paths` (relative to `mountpoint`) is
    /// listed by its folder; throws, naming the ones that are not, when
    /// `seconds` pass first.
    ///
    /// Only folders are read, from the root down, and a folder only once
    /// its parent lists it: nothing is looked up that is not there, and
    /// nothing is asked of the origin.
    static func waitUntilListed(_ paths: [String], in mountpoint: String, within seconds: Double = listingDeadline) throws {
        let started = Date()
        if Harness.eventually(seconds, { unlisted(paths, in: mountpoint).isEmpty }) {
            // Said when it took a while: how often the wait matters.
            let waited = Date().timeIntervalSince(started)
            if waited >= 0.5 { print("waited \(String(format: "%.1f", waited)) s for \(mountpoint) to list \(paths)") }
            return
        }
        let missing = unlisted(paths, in: mountpoint)
        guard !missing.isEmpty else { return }
        let root = ((try? FileManager.default.contentsOfDirectory(atPath: mountpoint)) ?? []).sorted()
        throw HarnessError(
            "after \(Int(seconds)) s the mount on \(mountpoint) does not list \(missing.joined(separator: ", ")) "
                + "(its root lists: \(root.joined(separator: ", ")))")
    }

    /// The name an episode of `publish` has in the mount: its date (UTC)
    /// and title, and `.mp3` for its `audio/mpeg` type.
    static func listedName(of episode: EpisodeFile) -> String {
        // "Sun, 01 Nov 2026 10:00:00 GMT": day, month, year.
        let parts = episode.date.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count >= 4, let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3])
        else { return episode.title + ".mp3" }
        return String(format: "%04d-%02d-%02d ", year, month + 1, day) + episode.title + ".mp3"
    }

    // MARK: - Private methods

    /// The paths of `paths` that their folders do not list now.
    private static func unlisted(_ paths: [String], in mountpoint: String) -> [String] {
        var listings: [String: Set<String>] = [:]
        func names(in folder: String) -> Set<String> {
            if let known = listings[folder] { return known }
            let names = Set((try? FileManager.default.contentsOfDirectory(atPath: mountpoint + folder)) ?? [])
            listings[folder] = names
            return names
        }
        return paths.filter { path in
            var folder = ""
            for part in path.split(separator: "/").map(String.init) {
                guard names(in: folder).contains(part) else { return true }
                folder += "/" + part
            }
            return false
        }
    }
}
