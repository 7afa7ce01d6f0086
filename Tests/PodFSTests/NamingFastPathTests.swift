@testable import PodFS
@testable import ReadRules
import Testing

/// The ASCII fast path of `Naming.sanitize` names every title exactly as
/// the Unicode path does.
@Suite struct NamingFastPathTests {
    @Test func asciiTitlesGetTheNamesTheUnicodePathGives() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = Array(0x20...0x7E) + [0x09, 0x0A, 0x0D, 0x2E, 0x2D, 0x2F, 0x20, 0x20]
        var titles = [
            "", " ", ".", "-", "..", " .-. x", "a/b", "  spaced   out  ", "\tTab\r\nLines", "-x", ".hidden",
            String(repeating: "long title ", count: 40), String(repeating: "/", count: 300),
        ]
        for _ in 0..<5000 {
            let length = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            titles.append(String(decoding: bytes, as: UTF8.self))
        }
        for title in titles {
            #expect(Naming.sanitize(title) == Naming.sanitizedScalars(title), "\(title.debugDescription)")
        }
        #expect(Naming.sanitize(nil) == Naming.sanitizedScalars(nil))
        // Anything else takes the Unicode path.
        #expect(Naming.sanitize("Caf\u{65}\u{301} \u{200B}x") == Naming.sanitizedScalars("Caf\u{65}\u{301} \u{200B}x"))
    }
}
