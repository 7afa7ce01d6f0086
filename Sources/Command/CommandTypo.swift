/// A mistyped command (`podfs stauts`) would be read as a mount: `mount`
/// is the default command, so the word becomes a mount point or a SOURCE
/// and the message speaks of a missing directory. This finds the command
/// such a word was meant to be.
enum CommandTypo {
    /// The commands a word is compared with.
    static let commands = [
        "mount", "unmount", "status", "subscribe", "unsubscribe", "subscriptions", "search", "prefetch", "cache", "help",
    ]

    /// What to tell a user whose first argument is a mistyped command
    /// (`podfs stauts --json`), checked before the arguments are parsed as
    /// a mount's, whose options would fail first; `nil` when it is not
    /// one: an option, a command, a path that `exists`, a URL or a word
    /// far from every command.
    static func hint(arguments: [String], exists: (String) -> Bool) -> String? {
        guard let word = arguments.first, !word.hasPrefix("-"), !exists(word), let meant = suggestion(for: word) else {
            return nil
        }
        return "podfs: '\(word)' is not a podfs command; did you mean 'podfs \(meant)'? (podfs --help lists them)\n"
    }

    /// The command `word` is one edit away from, two for a word of seven
    /// letters or more (the nearest; `nil` for the command itself, a path,
    /// a URL, or a short word such as `mnt`).
    static func suggestion(for word: String) -> String? {
        guard word.count >= 4, !word.contains("/"), !word.contains("."), !commands.contains(word) else { return nil }
        let lowered = Array(word.lowercased())
        let allowed = word.count >= 7 ? 2 : 1
        let scored = commands.map { ($0, distance(lowered, Array($0))) }.filter { $0.1 <= allowed }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The edit distance (insertions, deletions, substitutions and swaps of
    /// two neighbours) between `a` and `b`.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
