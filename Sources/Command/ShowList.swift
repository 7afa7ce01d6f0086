import Foundation
import Logging
import PodFS
import RangeCache

/// The shows a mount listed, in `<cache-dir>/shows.json`: what the next
/// mount lists at once, before it builds a show (docs/DESIGN.md, "Feeds").
///
/// Replaced atomically (written aside, then renamed); a file that is
/// missing or does not decode is no list, and the mount builds every kept
/// copy before it is ready, as a first mount does.
enum ShowList {
    static let fileName = "shows.json"

    static func read(directory: String) -> [Catalog.Placeholder] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName) else { return [] }
        return (try? JSONDecoder().decode([Catalog.Placeholder].self, from: data)) ?? []
    }

    static func write(_ shows: [Catalog.Placeholder], directory: String, logger: Logger) {
        let path = directory + "/" + fileName
        guard let data = try? JSONEncoder().encode(shows) else { return }
        let aside = path + ".tmp"
        let written = CachePrivacy.writeFile(aside, Array(data))
        if written != 0 || rename(aside, path) != 0 {
            logger.warning(
                "could not save the list of shows; the next mount builds every show before it is ready",
                metadata: ["path": "\(path)"])
        }
    }
}
