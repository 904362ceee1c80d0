import Foundation

/// Dates as ISO 8601 text in UTC: the form attribute files show (DESIGN.md's text forms) and the
/// form predicates accept for date constants (`CAST("2024-05-01T12:30:00Z", "NSDate")`).
///
/// One implementation for both, so that a date copied from a file into a predicate names exactly
/// the instant the file shows.
///
/// Threading: stateless; call from any thread.
public enum ISO8601DateText {
    /// ISO 8601 in UTC with the fewest fractional digits that read back to the same Double.
    public static func text(of date: Date) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(32)
        append(date, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends ``text(of:)`` as UTF-8: for writers of many dates (an export), without a string
    /// per date.
    public static func append(_ date: Date, to text: inout [UInt8]) {
        let t = date.timeIntervalSinceReferenceDate
        guard t.isFinite else {
            text.append(contentsOf: t.description.utf8)
            return
        }
        let whole = t.rounded(.down)
        let fraction = t - whole  // exact, but for -1 < t < 0 (see DateTextTests)
        appendWholeSeconds(whole, to: &text)
        defer { text.append(UInt8(ascii: "Z")) }
        if fraction == 0 { return }
        // date(from:) reads the text back as `whole + Double("0.ddd")`, so that is the round trip
        // to check. Up to 15 digits come from rounding fraction × 10^n (fast; printf made listing
        // a folder of dates twice as slow), and are checked without making the text: `n / 10^n`
        // (both exact doubles, the division correctly rounded) is the double "0.ddd" reads as;
        // more digits come from printf.
        var scale = 1.0
        for digits in 1...30 {
            if digits <= 15 {
                scale *= 10
                let scaled = (fraction * scale).rounded()
                if scaled < scale {
                    guard (whole + scaled / scale).bitPattern == t.bitPattern else { continue }
                    appendFraction(UInt64(scaled), digits: digits, to: &text)
                    return
                }
                // Rounded up to 1: printf gives "1.…" (no digits here) or, when the exact
                // fraction is just below the midpoint, all nines. Nines that do not read back
                // cannot be the answer either way, so printf (slow) is asked only when they do.
                guard (whole + (scale - 1) / scale).bitPattern == t.bitPattern else { continue }
            }
            if let decimals = Self.printfDigits(fraction, digits), let back = Double("0" + decimals),
                (whole + back).bitPattern == t.bitPattern
            {
                text.append(contentsOf: decimals.utf8)
                return
            }
        }
        text.append(contentsOf: String(format: "%.30f", fraction).dropFirst().utf8)
    }

    /// `.ddd`: `value` (below 10^digits) in `digits` digits, zero-padded on the left.
    private static func appendFraction(_ value: UInt64, digits: Int, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "."))
        var unit: UInt64 = 1
        for _ in 1..<digits { unit *= 10 }
        var rest = value
        while unit > 0 {
            text.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / unit % 10))
            rest %= unit
            unit /= 10
        }
    }

    /// `.ddd` as printf rounds it; nil when it rounds up to 1.
    private static func printfDigits(_ fraction: Double, _ digits: Int) -> String? {
        let text = String(format: "%.\(digits)f", fraction)
        guard !text.hasPrefix("1") else { return nil }
        return String(text.dropFirst())
    }

    /// `YYYY-MM-DDTHH:MM:SS` of a whole number of seconds since 2001 in UTC, in ISO 8601's
    /// proleptic Gregorian calendar for every year: Foundation's calendar switches to the Julian
    /// calendar before 15 October 1582 (its "0001-01-01" is the proleptic 0000-12-30), which ISO
    /// 8601 does not. Years before 1 are astronomical (0000 is 1 BC, -0001 is 2 BC); years after
    /// 9999 take as many digits as they need. Instants too far out for an Int of seconds (beyond
    /// about 292 billion years) print as their number of seconds.
    private static func appendWholeSeconds(_ whole: Double, to text: inout [UInt8]) {
        // Beyond ±10^17 s (3 billion years) the day arithmetic below could overflow at Int's
        // ends (a damaged value read from a store): such a date is its number of seconds.
        guard whole.magnitude < 1e17, let unix = Int(exactly: whole + 978_307_200) else {
            text.append(contentsOf: whole.description.utf8)
            return
        }
        let second = ((unix % 86_400) + 86_400) % 86_400
        let (y, m, d) = civil(fromDays: (unix - second) / 86_400)
        if y < 0 { text.append(UInt8(ascii: "-")) }
        let year = y.magnitude
        if year > 9999 {
            text.append(contentsOf: String(year).utf8)
        } else {
            twoDigits(Int(year / 100), &text)
            twoDigits(Int(year % 100), &text)
        }
        text.append(UInt8(ascii: "-"))
        twoDigits(m, &text)
        text.append(UInt8(ascii: "-"))
        twoDigits(d, &text)
        text.append(UInt8(ascii: "T"))
        twoDigits(second / 3600, &text)
        text.append(UInt8(ascii: ":"))
        twoDigits(second / 60 % 60, &text)
        text.append(UInt8(ascii: ":"))
        twoDigits(second % 60, &text)
    }

    /// `value` (0...99) as two digits.
    private static func twoDigits(_ value: Int, _ text: inout [UInt8]) {
        text.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / 10))
        text.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10))
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    public static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    public static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Parses `YYYY-MM-DD[THH:MM[:SS[.fraction]]][Z|±HH:MM]` (a space may stand for the T).
    public static func date(from text: String) -> Date? {
        let scalars = Array(text.utf8)
        var i = 0
        func number(_ count: Int) -> Int? {
            guard i + count <= scalars.count else { return nil }
            var v = 0
            for c in scalars[i..<(i + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += count
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < scalars.count, scalars[i] == c else { return false }
            i += 1
            return true
        }
        var negativeYear = false
        if i < scalars.count, scalars[i] == UInt8(ascii: "-") || scalars[i] == UInt8(ascii: "+") {
            negativeYear = scalars[i] == UInt8(ascii: "-")
            i += 1
        }
        // Four digits, or more for years after 9999 (bounded: no Int overflow below).
        var yearDigits = 0
        while i + yearDigits < scalars.count, yearDigits < 13,
            scalars[i + yearDigits] >= 48 && scalars[i + yearDigits] <= 57
        {
            yearDigits += 1
        }
        guard (4...12).contains(yearDigits), let unsignedYear = number(yearDigits), expect(UInt8(ascii: "-")),
            let mo = number(2), expect(UInt8(ascii: "-")), let d = number(2)
        else { return nil }
        let y = negativeYear ? -unsignedYear : unsignedYear
        var h = 0
        var mi = 0
        var s = 0
        var fraction = 0.0
        var offset = 0
        if i < scalars.count, scalars[i] == UInt8(ascii: "T") || scalars[i] == UInt8(ascii: " ") {
            i += 1
            guard let hh = number(2), expect(UInt8(ascii: ":")), let mm = number(2) else { return nil }
            h = hh
            mi = mm
            if expect(UInt8(ascii: ":")) {
                guard let ss = number(2) else { return nil }
                s = ss
                if i < scalars.count, scalars[i] == UInt8(ascii: ".") {
                    let start = i
                    i += 1
                    while i < scalars.count, scalars[i] >= 48 && scalars[i] <= 57 { i += 1 }
                    guard i > start + 1, let f = Double("0" + String(decoding: scalars[start..<i], as: UTF8.self))
                    else {
                        return nil
                    }
                    fraction = f
                }
            }
            if expect(UInt8(ascii: "Z")) {
            } else if i < scalars.count, scalars[i] == UInt8(ascii: "+") || scalars[i] == UInt8(ascii: "-") {
                let sign = scalars[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = number(2) else { return nil }
                _ = expect(UInt8(ascii: ":"))
                guard let om = number(2), oh < 24, om < 60 else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            }
        }
        guard i == scalars.count, (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, s < 60 else {
            return nil
        }
        // Proleptic Gregorian for every year, checking the day exists in its month.
        let days = Self.days(fromCivil: y, mo, d)
        guard Self.civil(fromDays: days) == (y, mo, d) else { return nil }
        let seconds = Double(days) * 86_400 - 978_307_200 + Double(h * 3600 + mi * 60 + s - offset)
        return Date(timeIntervalSinceReferenceDate: seconds + fraction)
    }
}
