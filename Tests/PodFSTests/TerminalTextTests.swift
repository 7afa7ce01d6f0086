import Foundation
import PodFS
import Testing

/// Feed titles and origin messages printed by `podfs status` move no
/// cursor and reorder no text.
@Suite struct TerminalTextTests {
    @Test func controlAndBidiCharactersGo() {
        let title = "Evil\u{202E}3pm.exe\u{9B}31m \u{1B}[2J\u{7F}\u{0}\u{2066}x\u{2069}\u{200B}\u{AD}\u{E0041}"
        #expect(TerminalText.clean(title) == "Evil3pm.exe31m [2Jx")
    }

    @Test func lineBreaksAndTabsBecomeSpaces() {
        #expect(TerminalText.clean("a\tb\nc\r\nd\u{2028}e\u{2029}f") == "a b c  d e f")
    }

    @Test func ordinaryTextIsUnchanged() {
        for text in ["Die Sendung mit der Maus", "Ça va — «oui»", "日本語のポッドキャスト", "emoji 🎧👩‍💻", ""] {
            #expect(TerminalText.clean(text) == text)
        }
    }

    @Test func jsonKeepsItsContentAndLosesTheRawCharacters() throws {
        let title = "Evil\u{202E}txt\u{9B}31m\u{7F}\u{E0041}\u{2028}ok"
        let encoded = try JSONEncoder().encode(["title": title])
        let escaped = TerminalText.escapingJSON(String(decoding: encoded, as: UTF8.self))
        #expect(escaped.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0.value > 0xFF && $0 != "\u{202E}" })
        #expect(escaped.contains("\\u202E") && escaped.contains("\\u009B") && escaped.contains("\\uDB40\\uDC41"))
        let decoded = try JSONDecoder().decode([String: String].self, from: Data(escaped.utf8))
        #expect(decoded["title"] == title)
    }
}
