/// Dates as feeds write them, turned into Unix seconds UTC.
///
/// Accepts RFC 822/2822 dates with the variants found in real feeds (missing
/// or wrong weekday, no comma, full month names, one-digit days, two-digit
/// years, missing seconds, named, military or numeric zones) and ISO 8601 /
/// RFC 3339 timestamps as Atom uses them. Returns `nil` rather than guessing
/// when the day, month or year is missing or out of range.
public enum FeedDate {
    // MARK: - Public methods

    /// The dates a file may show: from 1970-01-01 to the end of 9999 (UTC).
    /// A podcast is never older than the Unix epoch, and a time before it
    /// is negative, which some programs that copy files refuse; a date
    /// outside this range is no date (the episode gets the fallback time).
    public static let plausibleRange: ClosedRange<Int64> = 0...253_402_300_799

    /// Parses `text` as an ISO 8601 or RFC 822 date; `nil` when neither fits
    /// or the date is outside `plausibleRange`.
    public static func parse(_ text: String) -> Int64? {
        let common = text.utf8.withContiguousStorageIfAvailable(parseCommonForm) ?? nil
        guard let seconds = common ?? parseAnyDate(text), plausibleRange.contains(seconds) else { return nil }
        return seconds
    }

    /// The general parser, every form (`parse` tries `parseCommonForm` first).
    static func parseAnyDate(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        let trimmed = Array(bytes[start..<end])
        if trimmed.isEmpty { return nil }
        if trimmed.count >= 10, trimmed[0...3].allSatisfy(isDigit), trimmed[4] == UInt8(ascii: "-") {
            return parseISO8601(trimmed)
        }
        return parseRFC822(trimmed)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
    /// `days_from_civil`).
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The calendar date (UTC) of a Unix time, inverse of `daysFromCivil`.
    public static func civil(fromUnix seconds: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    // MARK: - Private constants

    private static let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]

    private static let weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Zone abbreviations seen in feeds, in minutes east of UTC. North
    /// American names come from RFC 822; the rest are common in European and
    /// Pacific feeds. An unknown name counts as UTC rather than losing the date.
    private static let namedZones: [String: Int64] = [
        "gmt": 0, "ut": 0, "utc": 0, "z": 0, "wet": 0,
        "est": -300, "edt": -240, "cst": -360, "cdt": -300,
        "mst": -420, "mdt": -360, "pst": -480, "pdt": -420,
        "akst": -540, "akdt": -480, "hst": -600,
        "bst": 60, "cet": 60, "cest": 120, "met": 60, "mest": 120, "west": 60,
        "eet": 120, "eest": 180, "msk": 180,
        "jst": 540, "kst": 540, "aest": 600, "aedt": 660, "acst": 570, "awst": 480,
        "nzst": 720, "nzdt": 780,
    ]

    // MARK: - ISO 8601

    private static func parseISO8601(_ s: [UInt8]) -> Int64? {
        var i = 0
        guard let year = number(s, &i, digits: 4), expect(s, &i, "-"),
            let month = number(s, &i, digits: 2), expect(s, &i, "-"),
            let day = number(s, &i, digits: 2)
        else { return nil }
        var hour: Int64 = 0
        var minute: Int64 = 0
        var second: Int64 = 0
        var offset: Int64 = 0
        if i < s.count, s[i] == UInt8(ascii: "T") || s[i] == UInt8(ascii: "t") || s[i] == 0x20 {
            i += 1
            guard let h = number(s, &i, digits: 2), expect(s, &i, ":"),
                let m = number(s, &i, digits: 2)
            else { return nil }
            hour = h
            minute = m
            if expect(s, &i, ":") {
                guard let sec = number(s, &i, digits: 2) else { return nil }
                second = sec
                if i < s.count, s[i] == UInt8(ascii: ".") || s[i] == UInt8(ascii: ",") {
                    i += 1
                    while i < s.count, isDigit(s[i]) { i += 1 }
                }
            }
            while i < s.count, s[i] == 0x20 { i += 1 }
            if i < s.count {
                guard let zone = numericOffset(Array(s[i...])) ?? namedOffset(Array(s[i...]))
                else { return nil }
                offset = zone
            }
        } else if i != s.count {
            return nil
        }
        return assemble(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second,
            offsetMinutes: offset)
    }

    // MARK: - RFC 822

    /// The form nearly every feed writes, "Mon, 02 Nov 2026 10:00:00 GMT"
    /// (the weekday optional, the zone GMT, UT, UTC or "+hhmm"), read in
    /// place: the general parser makes an array per token, and a thousand
    /// shows have a quarter of a million dates. `nil` for anything else or
    /// a date it cannot assemble; the general parser then reads the text,
    /// and gives the same answer for this form (`FeedDateTests`).
    static func parseCommonForm(_ s: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        var end = s.count
        while i < end, isSpace(s[i]) { i += 1 }
        while end > i, isSpace(s[end - 1]) { end -= 1 }
        func letters3(_ at: Int) -> (UInt8, UInt8, UInt8)? {
            guard at + 3 <= end, isLetter(s[at]), isLetter(s[at + 1]), isLetter(s[at + 2]) else { return nil }
            return (s[at].asciiLowercased, s[at + 1].asciiLowercased, s[at + 2].asciiLowercased)
        }
        func digits(_ at: Int, _ count: Int) -> Int64? {
            guard at + count <= end else { return nil }
            var value: Int64 = 0
            for k in at..<(at + count) {
                guard isDigit(s[k]) else { return nil }
                value = value * 10 + Int64(s[k] - 0x30)
            }
            return value
        }
        if let day = letters3(i), weekdayBytes.contains(where: { $0 == day }) {
            guard i + 5 <= end, s[i + 3] == UInt8(ascii: ","), s[i + 4] == 0x20 else { return nil }
            i += 5
        }
        let dayDigits = i + 1 < end && isDigit(s[i + 1]) ? 2 : 1
        guard let day = digits(i, dayDigits), i + dayDigits < end, s[i + dayDigits] == 0x20 else { return nil }
        i += dayDigits + 1
        guard let name = letters3(i), let month = monthBytes.firstIndex(where: { $0 == name }),
            i + 3 < end, s[i + 3] == 0x20
        else { return nil }
        i += 4
        guard let year = digits(i, 4), i + 4 < end, s[i + 4] == 0x20,
            let hour = digits(i + 5, 2), i + 7 < end, s[i + 7] == UInt8(ascii: ":"),
            let minute = digits(i + 8, 2), i + 10 < end, s[i + 10] == UInt8(ascii: ":"),
            let second = digits(i + 11, 2), i + 13 < end, s[i + 13] == 0x20
        else { return nil }
        i += 14
        let offset: Int64
        switch end - i {
        case 5 where s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-"):
            guard let hhmm = digits(i + 1, 4), hhmm / 100 <= 23, hhmm % 100 <= 59 else { return nil }
            let minutes = hhmm / 100 * 60 + hhmm % 100
            offset = s[i] == UInt8(ascii: "-") ? -minutes : minutes
        case 3 where letters3(i).map({ $0 == (0x67, 0x6D, 0x74) || $0 == (0x75, 0x74, 0x63) }) == true:
            offset = 0  // GMT, UTC
        case 2 where s[i].asciiLowercased == 0x75 && s[i + 1].asciiLowercased == 0x74:
            offset = 0  // UT
        default:
            return nil
        }
        return assemble(
            year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second,
            offsetMinutes: offset)
    }

    private static let monthBytes = months.map { name in
        let b = Array(name.utf8)
        return (b[0], b[1], b[2])
    }

    private static let weekdayBytes = weekdays.map { name in
        let b = Array(name.utf8)
        return (b[0], b[1], b[2])
    }

    private static func parseRFC822(_ raw: [UInt8]) -> Int64? {
        var year: Int64?
        var month: Int64?
        var day: Int64?
        var time: (Int64, Int64, Int64)?
        var offset: Int64?
        var pm: Bool?
        for token in tokens(raw) {
            let lower = token.map { $0.asciiLowercased }
            if lower.contains(UInt8(ascii: ":")), time == nil, let first = lower.first, isDigit(first) {
                // "12:00:00", also glued to a zone: "12:00:00GMT", "12:00+0100".
                var cut = 0
                while cut < lower.count, isDigit(lower[cut]) || lower[cut] == UInt8(ascii: ":") {
                    cut += 1
                }
                guard let parsed = clock(Array(lower[..<cut])) else { return nil }
                time = parsed
                if cut < lower.count {
                    offset = zoneOffset(Array(lower[cut...])) ?? offset
                }
            } else if lower.allSatisfy(isDigit) {
                guard let value = Int64(String(decoding: lower, as: UTF8.self)) else { return nil }
                if day == nil, lower.count <= 2, year == nil || month != nil {
                    day = value
                } else if year == nil {
                    // RFC 2822 §4.3: two digits 00-49 are 20xx, 50-99 and
                    // three digits count from 1900.
                    switch lower.count {
                    case ...2: year = value < 50 ? 2000 + value : 1900 + value
                    case 3: year = 1900 + value
                    default: year = value
                    }
                } else {
                    return nil
                }
            } else if let first = lower.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
                guard let zone = numericOffset(lower) else { return nil }
                offset = zone
            } else if lower == Array("am".utf8) || lower == Array("pm".utf8) {
                pm = lower[0] == UInt8(ascii: "p")
            } else if let m = monthNumber(lower), month == nil {
                month = m
            } else if isWeekday(lower) {
                continue
            } else if let zone = zoneOffset(lower) {
                offset = zone
            } else if lower.allSatisfy(isLetter), lower.count >= 2, lower.count <= 5 {
                // An unknown zone abbreviation: keep the date, assume UTC.
                offset = offset ?? 0
            } else if lower.contains(UInt8(ascii: "/")), lower.first.map(isLetter) == true,
                lower.allSatisfy({ isLetter($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "_") })
            {
                // A tz database name ("Europe/Berlin"): no table of rules
                // here, so UTC rather than losing the date.
                offset = offset ?? 0
            } else {
                return nil
            }
        }
        guard let year, let month, let day else { return nil }
        var (hour, minute, second) = time ?? (0, 0, 0)
        if let pm, hour >= 1, hour <= 12 {
            hour = (hour % 12) + (pm ? 12 : 0)
        }
        return assemble(
            year: year, month: month, day: day, hour: hour, minute: minute, second: second,
            offsetMinutes: offset ?? 0)
    }

    /// Splits on white space and commas, dropping `(comments)`.
    private static func tokens(_ s: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var current: [UInt8] = []
        var depth = 0
        for byte in s {
            if byte == UInt8(ascii: "(") {
                depth += 1
            } else if byte == UInt8(ascii: ")") {
                depth = max(0, depth - 1)
            } else if depth > 0 {
                continue
            } else if isSpace(byte) || byte == UInt8(ascii: ",") {
                if !current.isEmpty { result.append(current) }
                current = []
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty { result.append(current) }
        // "Aug. 3" and "03-Aug-2005" forms: split dashed dates between letters.
        return result.flatMap { token -> [[UInt8]] in
            let trimmed = token.last == UInt8(ascii: ".") ? Array(token.dropLast()) : token
            if trimmed.contains(where: isLetter), trimmed.first.map(isDigit) == true,
                trimmed.contains(UInt8(ascii: "-"))
            {
                return trimmed.split(separator: UInt8(ascii: "-")).map(Array.init)
            }
            return [trimmed]
        }
    }

    private static func clock(_ s: [UInt8]) -> (Int64, Int64, Int64)? {
        let parts = s.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
            parts.allSatisfy({ !$0.isEmpty && $0.count <= 2 })
        else { return nil }
        let values = parts.compactMap { Int64(String(decoding: $0, as: UTF8.self)) }
        guard values.count == parts.count else { return nil }
        return (values[0], values[1], values.count == 3 ? values[2] : 0)
    }

    private static func monthNumber(_ lower: [UInt8]) -> Int64? {
        guard lower.count >= 3, lower.allSatisfy(isLetter) else { return nil }
        let prefix = String(decoding: lower.prefix(3), as: UTF8.self)
        guard let index = months.firstIndex(of: prefix) else { return nil }
        return Int64(index + 1)
    }

    private static func isWeekday(_ lower: [UInt8]) -> Bool {
        guard lower.count >= 3, lower.allSatisfy(isLetter) else { return false }
        return weekdays.contains(String(decoding: lower.prefix(3), as: UTF8.self))
    }

    /// A named zone ("PST"), a named zone with an offset ("GMT+0100"), a
    /// military letter, or a numeric offset; minutes east of UTC.
    private static func zoneOffset(_ lower: [UInt8]) -> Int64? {
        if let numeric = numericOffset(lower) { return numeric }
        if let named = namedOffset(lower) { return named }
        if let sign = lower.firstIndex(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") }),
            namedOffset(Array(lower[..<sign])) == 0,
            let rest = numericOffset(Array(lower[sign...]))
        {
            return rest
        }
        return nil
    }

    private static func namedOffset(_ s: [UInt8]) -> Int64? {
        let lower = String(decoding: s.map { $0.asciiLowercased }, as: UTF8.self)
        if let known = namedZones[lower] { return known }
        // RFC 2822 §4.3: RFC 822 got the military zones' signs backwards, so
        // they carry no reliable information and count as UTC.
        if lower.utf8.count == 1, let letter = lower.utf8.first, isLetter(letter),
            letter != UInt8(ascii: "j")
        {
            return 0
        }
        return nil
    }

    /// "+0100", "-05:00", "+01", "-5"; minutes east of UTC.
    private static func numericOffset(_ s: [UInt8]) -> Int64? {
        guard let sign = s.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else {
            return nil
        }
        let digits = s.dropFirst().filter { $0 != UInt8(ascii: ":") }
        guard !digits.isEmpty, digits.count <= 4, digits.allSatisfy(isDigit),
            s.dropFirst().allSatisfy({ isDigit($0) || $0 == UInt8(ascii: ":") })
        else { return nil }
        let value = Int64(String(decoding: digits, as: UTF8.self)) ?? 0
        let hours = digits.count <= 2 ? value : value / 100
        let minutes = digits.count <= 2 ? 0 : value % 100
        guard hours <= 23, minutes <= 59 else { return nil }
        let total = hours * 60 + minutes
        return sign == UInt8(ascii: "-") ? -total : total
    }

    // MARK: - Assembly

    private static func assemble(
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64,
        offsetMinutes: Int64
    ) -> Int64? {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
            day <= daysInMonth(year: year, month: month),
            (0...24).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        if hour == 24, minute != 0 || second != 0 { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = hour * 3600 + minute * 60 + min(second, 59)
        return days * 86_400 + seconds - offsetMinutes * 60
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // MARK: - Bytes

    private static func number(_ s: [UInt8], _ i: inout Int, digits: Int) -> Int64? {
        guard i + digits <= s.count, s[i..<(i + digits)].allSatisfy(isDigit) else { return nil }
        let value = s[i..<(i + digits)].reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        i += digits
        return value
    }

    private static func expect(_ s: [UInt8], _ i: inout Int, _ c: Unicode.Scalar) -> Bool {
        guard i < s.count, s[i] == UInt8(ascii: c) else { return false }
        i += 1
        return true
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func isLetter(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }

    private static func isSpace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D
    }
}
