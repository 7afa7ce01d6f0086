import ArgumentParser
import Feeds
import Foundation
import HTTPClient
import Logging
import PodFS

/// `podfs search TERM... [--directory URL] [--limit N] [--json]`: asks a
/// podcast directory (Apple's, by default) for shows matching the words and
/// prints each match's feed URL, ready for `podfs subscribe`.
///
/// Exits 0 with the matches, or with none ("no podcasts found" on stderr);
/// 1 with one line on stderr when the directory cannot be asked or its
/// answer is no search result.
struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find podcasts in a directory by name and print their feed URLs.",
        discussion: """
            Asks Apple's podcast directory (the iTunes Search API, no account needed) for shows \
            matching the words, and prints each match's title, author and episode count with its \
            feed URL, ready for podfs subscribe URL. Matches without a usable http or https \
            feed URL are left out. The directory is yours to choose, so it may be on any address, \
            this machine and your own network included; a redirect it answers with is held to the \
            address-zone rule, as a feed's would be. Exits 0 also when nothing matches, saying so \
            on stderr, and 1 when the directory cannot be asked or its answer is no search result.
            """)

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ask another directory speaking the iTunes Search API instead of Apple's.",
            discussion: "The request goes to URL/search, or to URL itself when it already ends in /search.",
            valueName: "URL"))
    var directory = DirectorySearch.appleDirectory

    @Option(name: .long, help: ArgumentHelp("Show at most N matches, from 1 to 200.", valueName: "N"))
    var limit = DirectorySearch.defaultLimit

    @Flag(name: .long, help: "Print the matches as a JSON array, for scripts.")
    var json = false

    @Argument(help: ArgumentHelp("The words to search for: a show's name, its author, a topic.", valueName: "TERM"))
    var terms: [String] = []

    // MARK: - Methods

    func validate() throws {
        guard terms.contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ValidationError("give the words to search for, e.g. podfs search history of rome")
        }
        guard DirectorySearch.limits.contains(limit) else {
            throw ValidationError("--limit needs a number of matches from 1 to 200, e.g. --limit 50")
        }
        guard DirectorySearch(directory: directory, terms: terms, limit: limit) != nil else {
            throw ValidationError(
                "--directory needs an http or https URL, e.g. --directory https://itunes.apple.com, not '\(directory)'")
        }
    }

    func run() throws {
        guard let search = DirectorySearch(directory: directory, terms: terms, limit: limit) else {
            throw ValidationError("--directory needs an http or https URL")
        }
        var matches: [DirectoryMatch]
        do {
            matches = try Self.ask(search)
        } catch {
            let shown = FeedURL.redacted(search.endpoint, for: .log)
            Self.say(error.message(directory: shown))
            throw ExitCode(1)
        }
        // A directory may answer with more than it was asked for.
        matches = Array(matches.prefix(limit))
        if matches.isEmpty { Self.say("no podcasts found for \"\(search.term)\"") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(TerminalText.escapingJSON(String(decoding: try encoder.encode(matches), as: UTF8.self)))
        } else {
            print(matches.map(\.text).joined(), terminator: "")
        }
    }

    // MARK: - Private methods

    /// Fetches the search and reads the matches. The user chose the
    /// directory, so the request is theirs (`URLIssuer.user`) and may go to
    /// any address; redirects are judged as `AddressPolicy` says.
    private static func ask(_ search: DirectorySearch) throws(DirectorySearchError) -> [DirectoryMatch] {
        var logger = Logger(label: "podfs")
        logger.logLevel = .critical
        let client = HTTPClient(logger: logger, userAgent: PodfsVersion.userAgent, policy: AddressPolicy())
        defer { client.shutdown() }
        let response: HTTPResponse
        do {
            response = try client.fetchAll(
                HTTPRequest(
                    url: search.url, headers: [("Accept", "application/json")], acceptCompressed: true,
                    connectTimeout: 10, totalTimeout: 30),
                limit: DirectorySearch.answerLimit)
        } catch let error where error.kind == .tooLarge {
            throw .tooLarge(DirectorySearch.answerLimit)
        } catch {
            throw .transfer(error.kind, error.message)
        }
        guard response.head.status == 200 else { throw .status(response.head.status) }
        return try DirectorySearch.results(from: response.body)
    }

    /// One line on stderr, cleaned for the terminal (it may quote the
    /// directory's or libcurl's words).
    private static func say(_ message: String) {
        Console.error("podfs search: \(TerminalText.clean(message))\n")
    }
}
