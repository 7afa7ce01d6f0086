/// A cache size cap as a person types it: `500M`, `10G`, `1.5T`, plain
/// bytes, or `none` (no cap).
///
/// K, M, G and T are powers of 1024; an optional trailing `B` or `iB` is
/// accepted (`500MB`, `500MiB`), letters in any case. Anything else is
/// refused with a `CacheSizeError` that says what to type instead.
public struct CacheSize: Sendable, Equatable {
    // MARK: - Public properties

    /// Bytes, or `nil` for no cap.
    public let bytes: Int64?

    // MARK: - Private properties

    /// Binary multipliers by suffix letter.
    private static let multipliers: [Character: Double] = [
        "K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024, "T": 1024 * 1024 * 1024 * 1024,
    ]

    // MARK: - Init

    /// Parses `text`; throws a `CacheSizeError` for anything that is not a
    /// positive size or `none`.
    public init(_ text: String) throws(CacheSizeError) {
        let trimmed = String(text.uppercased().drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        if trimmed == "NONE" || trimmed == "UNLIMITED" {
            bytes = nil
            return
        }
        var number = Substring(trimmed)
        for suffix in ["IB", "B"] where number.hasSuffix(suffix) && number.count > suffix.count {
            number = number.dropLast(suffix.count)
            break
        }
        var multiplier: Double = 1
        if let last = number.last, let value = Self.multipliers[last] {
            multiplier = value
            number = number.dropLast()
        }
        // Digits with at most one decimal point: no signs, exponents, hex,
        // "inf" or "nan", which Double(_:) would accept.
        let digits = number.filter { $0 != "." }
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }),
            number.count - digits.count <= 1, let value = Double(number),
            value > 0, value * multiplier < 9e18, value * multiplier >= 1
        else {
            throw CacheSizeError(text: text)
        }
        bytes = Int64(value * multiplier)
    }
}

/// A cache size that could not be parsed, with what to type instead.
public struct CacheSizeError: Error, Sendable, CustomStringConvertible {
    /// What was typed.
    public let text: String

    public var description: String {
        "'\(text)' is not a cache size; write a number with K, M, G or T (powers of 1024), "
            + "e.g. 500M or 10G, or none for no cap"
    }
}
