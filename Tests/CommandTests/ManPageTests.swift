import ArgumentParser
import Foundation
import Testing

@testable import podfs

/// The man page (`mount-helper/podfs.1`, which the package and `install.sh`
/// install) against what `--help` says, so neither can drift: every option of
/// `podfs mount --help` and every `-o` name it lists has an entry of its own
/// under OPTIONS, the page names no option podfs does not take, and every
/// command and each of its long options is in the page.
@Suite struct ManPageTests {
    // MARK: - Properties

    /// The page with roff's escapes for `-` and `\` read and fonts dropped.
    private static let page: String = {
        let url = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "mount-helper/podfs.1")
        let source = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return source.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\e", with: "\\")
            .replacingOccurrences(of: "\\fB", with: "").replacingOccurrences(of: "\\fI", with: "")
            .replacingOccurrences(of: "\\fR", with: "").replacingOccurrences(of: "\\fP", with: "")
    }()

    /// `podfs mount --help`, one line per option.
    private static let mountHelp = PodfsCommand.helpMessage(for: Mount.self, columns: 10_000)

    // MARK: - Tests

    @Test func thePageIsThere() {
        #expect(Self.page.hasPrefix(".TH PODFS 1"))
    }

    @Test func everyMountOptionHasAnEntryUnderOptions() throws {
        let headings = try Self.optionHeadings()
        let documented = Set(try headings.flatMap { try Self.flags(in: $0) })
        for flag in try Self.helpFlags(Self.mountHelp) where flag != "-o" {
            #expect(documented.contains(flag), "podfs mount --help has \(flag); podfs.1's OPTIONS has no entry for it")
        }
    }

    @Test func everyDashOOptionOfTheHelpHasAnEntryUnderOptions() throws {
        let documented = Set(try Self.optionHeadings().flatMap(Self.dashONames))
        let listed = try Self.helpDashONames()
        #expect(listed.count >= 15, "the -o list of podfs mount --help was not found: \(listed)")
        for name in listed {
            #expect(documented.contains(name), "podfs mount --help lists -o \(name); podfs.1's OPTIONS does not")
        }
    }

    @Test func thePageNamesNoOptionPodfsDoesNotTake() throws {
        let helpFlags = Set(try Self.helpFlags(Self.mountHelp))
        let listed = Set(try Self.helpDashONames())
        for heading in try Self.optionHeadings() {
            for flag in try Self.flags(in: heading) {
                #expect(helpFlags.contains(flag), "podfs.1 documents \(flag); podfs mount --help has no such option")
            }
            // fstab's options, which podfs accepts and ignores, have one
            // entry of their own; each of them must still be accepted.
            if heading.contains("x-systemd") {
                for name in Self.dashONames(in: heading) {
                    #expect(throws: Never.self, "-o \(name)") { try MountOptions([name]) }
                }
                continue
            }
            for name in Self.dashONames(in: heading) {
                #expect(listed.contains(name), "podfs.1 documents -o \(name); podfs mount --help does not list it")
            }
        }
    }

    @Test func everyCommandAndItsLongOptionsAreInThePage() throws {
        let commands: [(String, any ParsableCommand.Type)] = [
            ("unmount", Unmount.self), ("status", Status.self), ("prefetch", Prefetch.self),
            ("search", Search.self), ("subscribe", Subscribe.self), ("unsubscribe", Unsubscribe.self),
            ("subscriptions", Subscriptions.self), ("cache verify", CacheVerify.self), ("cache clear", CacheClear.self),
        ]
        #expect(Self.page.contains(".B mount\n"))
        for (name, command) in commands {
            #expect(Self.page.contains(".B podfs \(name)"), "podfs.1's SYNOPSIS lacks podfs \(name)")
            let help = PodfsCommand.helpMessage(for: command, columns: 10_000)
            for flag in try Self.helpFlags(help) where flag.hasPrefix("--") {
                #expect(Self.page.contains(flag), "podfs \(name) --help has \(flag); podfs.1 does not say it")
            }
        }
    }

    @Test func theHelpIsReadAsThePageExpects() throws {
        #expect(try Self.helpFlags(Self.mountHelp).contains("--cache-dir"))
        #expect(try Self.helpFlags(Self.mountHelp).contains("-f"))
        #expect(try Self.helpDashONames().contains("readahead_kb"))
        #expect(Self.dashONames(in: ".BR --syslog \", \" \"-o syslog\"") == ["syslog"])
        #expect(Self.dashONames(in: ".B -o auto, noauto, x-systemd.*") == ["auto", "noauto"])
    }

    // MARK: - Private methods

    /// The first line of each tagged paragraph (`.TP`) under OPTIONS.
    private static func optionHeadings() throws -> [String] {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: ".SH OPTIONS"))
        let end = lines[(start + 1)...].firstIndex { $0.hasPrefix(".SH ") } ?? lines.endIndex
        var headings: [String] = []
        for index in start..<(end - 1) where lines[index] == ".TP" {
            headings.append(lines[index + 1])
        }
        return headings
    }

    /// The options an option line of `--help` or a heading names:
    /// `--cache-dir`, `-f`, `-h`.
    private static func flags(in text: String) throws -> [String] {
        let pattern = try Regex(#"(?:^|[\s"])(--[a-z][a-z-]*|-[a-z])(?=[\s",]|$)"#)
        return text.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) }
    }

    /// The options of a `--help`: the lines indented by exactly two spaces
    /// under OPTIONS.
    private static func helpFlags(_ help: String) throws -> [String] {
        guard let options = help.range(of: "OPTIONS:\n") else { return [] }
        return try help[options.upperBound...].split(separator: "\n")
            .filter { $0.hasPrefix("  -") }
            .flatMap { line in try flags(in: String(line.prefix { $0 != "<" }.prefix(24))) }
    }

    /// The names `podfs mount --help` lists for `-o`: `cache_dir`, `syslog`.
    private static func helpDashONames() throws -> [String] {
        let line = try #require(mountHelp.split(separator: "\n").first { $0.contains("comma separated:") })
        let list = try #require(line.split(separator: ":", maxSplits: 1).last)
        return list.trimmingCharacters(in: CharacterSet(charactersIn: " ."))
            .components(separatedBy: ", ")
            .map { String($0.prefix { $0 != "=" && $0 != "|" }) }
    }

    /// The `-o` names a heading documents: `-o cache_dir=`, `-o syslog`, and
    /// the list after `-o` in `.B -o auto, noauto, ...`.
    private static func dashONames(in heading: String) -> [String] {
        guard let first = heading.range(of: "-o ") else { return [] }
        if !heading[first.upperBound...].contains("\"") {
            return heading[first.upperBound...].components(separatedBy: ", ")
                .filter { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } && !$0.isEmpty }
        }
        return heading.components(separatedBy: "-o ").dropFirst()
            .map { String($0.prefix { $0.isLetter || $0.isNumber || $0 == "_" }) }
    }
}
