import RangeCache
import Testing

/// `--cache-size` values: binary units, `none`, and a clear refusal of
/// anything else.
@Suite struct CacheSizeTests {
    private static let mib: Int64 = 1024 * 1024
    private static let valid: [(String, Int64)] = [
        ("500M", Int64(500) * 1024 * 1024),
        ("10G", Int64(10) * 1024 * 1024 * 1024),
        ("10g", Int64(10) * 1024 * 1024 * 1024),
        ("1.5T", Int64(3) * 512 * 1024 * 1024 * 1024),
        ("64K", Int64(64) * 1024),
        ("500MB", Int64(500) * 1024 * 1024),
        ("500MiB", Int64(500) * 1024 * 1024),
        ("2GiB", Int64(2) * 1024 * 1024 * 1024),
        ("4096", Int64(4096)),
        ("4096B", Int64(4096)),
        (" 7M ", Int64(7) * 1024 * 1024),
    ]

    @Test(arguments: valid)
    func sizesAreParsedInPowersOf1024(text: String, bytes: Int64) throws {
        #expect(try CacheSize(text).bytes == bytes)
    }

    @Test(arguments: ["none", "NONE", "None", "unlimited"])
    func noneMeansNoCap(text: String) throws {
        #expect(try CacheSize(text).bytes == nil)
    }

    @Test(arguments: [
        "", " ", "abc", "M", "G", "-5M", "+5M", "0", "0M", "0.0001", "10X", "10 M", "1e3M", "0x10M", "inf",
        "nan", "1.2.3M", "99999999T", "5MM", "B", "iB",
    ])
    func badInputIsRefusedWithWhatToTypeInstead(text: String) {
        do {
            let size = try CacheSize(text)
            Issue.record("'\(text)' was accepted as \(String(describing: size.bytes))")
        } catch {
            #expect(error.text == text)
            #expect(error.description.contains("'\(text)' is not a cache size"))
            #expect(error.description.contains("500M"), "the message shows an example")
            #expect(error.description.contains("none"), "the message tells how to have no cap")
        }
    }
}
