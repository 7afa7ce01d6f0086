import Foundation
import Testing

/// The read rules are pure (docs/DESIGN.md, "The read path"): no file of
/// `Sources/ReadRules/` (a module of its own, which cannot import FUSEBridge:
/// `Package.swift` gives it none) imports FUSEBridge or names a FUSE reply, a
/// scratch file or a closure to run; the state holds tokens, and the
/// driver resolves them.
@Suite struct PureRulesTests {
    @Test func noRuleImportsFUSEOrHoldsARequestAFileOrAClosure() throws {
        let rules = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/ReadRules")
        let files = try FileManager.default.contentsOfDirectory(atPath: rules.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10, "the rules' files, in \(rules.path)")
        for file in files {
            let text = try String(contentsOf: rules.appendingPathComponent(file), encoding: .utf8)
            let code = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            for forbidden in ["import FUSEBridge", "DataReplying", "OpenReplying", "OpenOptions", "ScratchFile", "@Sendable ()"] {
                let lines = code.filter { $0.contains(forbidden) }
                #expect(lines.isEmpty, "\(file) names \(forbidden): \(lines)")
            }
        }
    }
}
