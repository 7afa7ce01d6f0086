import Foundation
import Locking
import RangeCache

/// What `.podfs/status` and `podfs status` show of the keeping: the
/// keeper writes it as `keeping.json` in the cache directory, at most once a
/// second while it changes, and once more when the mount stops.
extension Keeper {
    public struct Report: Codable, Sendable, Equatable {
        public struct Show: Codable, Sendable, Equatable {
            public var title: String
            public var keepLatest: Int
            /// Episodes kept (newest N and pins that fit).
            public var kept: Int
            public var complete: Int
            public var pinned: [String]
            /// Kept by the settings but left out: they do not fit the cap.
            public var unfit: [String]
            /// The keys of the episodes kept, so `podfs status` can count
            /// the complete ones from the index when no mount runs (`nil`
            /// in a report of an earlier podfs).
            public var keys: [String]? = nil
        }

        public struct Download: Codable, Sendable, Equatable {
            public var show: String
            public var episode: String
            public var bytes: Int64
            public var size: Int64
            /// Bytes a second since this episode's download began.
            public var rate: Int64
            public var secondsLeft: Int64?
            /// Paused for a reader.
            public var paused: Bool
            /// Waiting for room on the cache's full disk (`nil` in a report
            /// of an earlier podfs).
            public var waitsForRoom: Bool? = nil
        }

        public var keepLatest: Int
        public var keptBytes: Int64
        public var capBytes: Int64?
        public var shows: [Show]
        /// The downloads in progress, by episode name.
        public var downloading: [Download]
        /// Every key kept from eviction but the covers': the next mount
        /// spares them until it has planned their shows again.
        public var keptKeys: [String]
        /// The covers kept, the same way (`nil` in a report written before
        /// covers were kept).
        public var keptCovers: [String]?
        /// Covers the plan keeps, and how many of them are complete.
        public var covers: Int?
        public var coversComplete: Int?
    }


    /// Writes the report when it changed, at most once a second unless
    /// `force` (serialised: every thread of the keeper writes it).
    func writeReport(plan: KeepPlan, shows: [Catalog.Show], force: Bool = false) {
        writing.withLock { writing in
            let now = monotonicSeconds()
            // The planning thread writes what was held back within a second.
            guard force || now - writing.last >= 1 else { return writing.heldBack = true }
            writing.heldBack = false
            let settings = settings.withLock { $0 }
            let unfit = Set(plan.unfit)
            let downloads = isStopping ? [] : progress.withLock { $0.downloads.values.compactMap { $0 } }
            let kept = keptKeysByKind(plan)
            let covers = shows.compactMap { show in show.cover.flatMap { plan.kept[$0.key] == .cover ? $0 : nil } }
            let report = Report(
                keepLatest: mountLatest, keptBytes: plan.keptBytes, capBytes: cap,
                shows: shows.map { show in
                    // Each filter only when something can match it (a
                    // thousand shows keeping nothing: 200,000 lookups a report).
                    let kept = plan.keepsEpisodes ? show.episodes.filter { plan.kept[$0.key] != nil } : []
                    return Report.Show(
                        title: show.name, keepLatest: plan.latest[show.scope.keyScope] ?? mountLatest,
                        kept: kept.count, complete: kept.filter { reader.fillProgress($0).holdsAll }.count,
                        pinned: settings.pinned.isEmpty
                            ? [] : show.episodes.filter { settings.pinned.contains($0.key) }.map(\.name),
                        unfit: unfit.isEmpty ? [] : show.episodes.filter { unfit.contains($0.key) }.map(\.name),
                        keys: kept.map(\.key))
                },
                downloading: downloads.sorted { $0.episode < $1.episode },
                keptKeys: kept.keys.sorted(), keptCovers: kept.covers.sorted(), covers: covers.count,
                coversComplete: covers.count { reader.fillProgress($0).holdsAll })
            let previous = progress.withLock { progress in
                defer { progress.report = report }
                return progress.report
            }
            guard report != previous, let reportPath else { return }
            writing.last = now
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(report) else { return }
            let temporary = reportPath + ".new"
            if CachePrivacy.writeFile(temporary, Array(data)) == 0 {
                rename(temporary, reportPath)
            }
        }
    }

    /// The kept keys the last mount wrote in its report: the covers apart.
    static func lastKeptKeys(reportPath: String?) -> (keys: Set<String>, covers: Set<String>) {
        guard let reportPath, let data = FileManager.default.contents(atPath: reportPath) else { return ([], []) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let report = try? decoder.decode(Report.self, from: data)
        return (Set(report?.keptKeys ?? []), Set(report?.keptCovers ?? []))
    }
}
