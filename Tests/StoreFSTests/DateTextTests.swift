import Foundation
import ObjectGraph
import Testing

@testable import StoreFS

/// Date attribute files: ISO 8601 in UTC, checked against Foundation's own formatter and calendar.
struct DateTextTests {
    /// Deterministic spread of instants over 1583–9999 and around the epochs, with and without fractions.
    static var instants: [Double] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var result: [Double] = [0, -1, 1, -978_307_200, 86_399.5, -1.001, 1e9 + 0.25, -13_000_000_000, 250_000_000_000]
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let seconds = Double(Int64(bitPattern: state >> 1) % 250_000_000_000) - 12_000_000_000
            let fraction = Double(state >> 54) / 1000
            result.append(seconds + (state & 1 == 0 ? 0 : fraction))
        }
        return result
    }

    @Test func wholeSecondsMatchFoundationsISO8601Formatter() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        for t in Self.instants {
            let whole = t.rounded(.down)
            let date = Date(timeIntervalSinceReferenceDate: whole)
            guard let year = Calendar(identifier: .gregorian).dateComponents(in: formatter.timeZone, from: date).year,
                (1583...9999).contains(year)
            else { continue }
            #expect(ValueText.format(date) == formatter.string(from: date), "\(whole)")
        }
    }

    /// Except within the second before 2001 (-1 < t < 0): the text reads back as -1 + fraction,
    /// which cannot hold the finer steps of doubles that close to 0 (a known limit, in the notes).
    @Test func everyInstantReadsBackToTheSameDouble() throws {
        for t in Self.instants + [1e-7, 0.1, 0.3333333333333333, 123_456_789.123_456_78] where !(t > -1 && t < 0) {
            let text = ValueText.format(Date(timeIntervalSinceReferenceDate: t))
            let back = try #require(ValueText.parseDate(text), "\(text)")
            #expect(back.timeIntervalSinceReferenceDate.bitPattern == t.bitPattern, "\(t) -> \(text)")
        }
    }

    /// The fraction has the fewest digits that read back (no shorter rounding of the value does,
    /// printf's included), for fractions just under a whole second too, where rounding to fewer
    /// digits carries into the seconds; appended or made as a string, the same text.
    @Test func fractionsHaveTheFewestDigitsThatReadBack() throws {
        var fractions: [Double] = []
        for digits in 1...16 {
            let step = pow(10, -Double(digits))
            fractions += [1 - step, 1 - step / 2, 1 - step / 3, 1 - step * 0.4999, 1 - step * 0.5001, step, 0.5 + step]
        }
        for whole in [0.0, 1, 59, 86_399, 123_456_789, 978_307_199, -2, -86_400, 1e11] {
            for fraction in fractions where fraction > 0 && fraction < 1 {
                let t = whole + fraction
                let date = Date(timeIntervalSinceReferenceDate: t)
                let text = ISO8601DateText.text(of: date)
                var appended: [UInt8] = Array("x".utf8)
                ISO8601DateText.append(date, to: &appended)
                #expect(String(decoding: appended, as: UTF8.self) == "x" + text)
                let back = try #require(ISO8601DateText.date(from: text), "\(text)")
                #expect(back.timeIntervalSinceReferenceDate.bitPattern == t.bitPattern, "\(t) -> \(text)")
                // Fewer digits: printf's rounding of the fraction (carrying into the seconds when
                // it rounds to 1) never reads back.
                let shown = text.contains(".") ? (text.split(separator: ".").last.map { $0.dropLast().count } ?? 0) : 0
                let exactWhole = t.rounded(.down)
                for digits in 0..<shown {
                    let rounded = String(format: "%.\(digits)f", t - exactWhole)
                    let value = exactWhole + (Double(rounded) ?? .nan)
                    #expect(
                        value.bitPattern != t.bitPattern, "\(t): \(rounded) reads back with fewer digits than \(text)")
                }
            }
        }
    }

    /// Around the years where Foundation's calendar changes (1582, and 10000 where ISO 8601 needs
    /// a fifth digit), text and value agree both ways.
    @Test func theEdgesOfTheFourDigitYearsReadBack() throws {
        for text in ["1582-12-31T23:59:59Z", "1583-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1600-02-29T12:00:00Z"] {
            let date = try #require(ValueText.parseDate(text), "\(text)")
            #expect(ValueText.format(date) == text)
        }
        let lastSecond = try #require(ValueText.parseDate("9999-12-31T23:59:59Z"))
        let next = Date(timeIntervalSinceReferenceDate: lastSecond.timeIntervalSinceReferenceDate + 1)
        #expect(ValueText.format(next) == "10000-01-01T00:00:00Z")
        #expect(ValueText.parseDate("10000-01-01T00:00:00Z") == next)
        let before = try #require(ValueText.parseDate("1583-01-01T00:00:00Z"))
        #expect(
            ValueText.format(Date(timeIntervalSinceReferenceDate: before.timeIntervalSinceReferenceDate - 1))
                == "1582-12-31T23:59:59Z")
    }

    /// Before 1582 dates are ISO 8601's proleptic Gregorian, not Foundation's Julian calendar
    /// (which calls 0000-12-30 "0001-01-01"). Seconds from Python's proleptic `date.toordinal`.
    @Test func datesBefore1582AreProlepticGregorian() throws {
        let cases: [(String, Double)] = [
            ("0001-01-01T00:00:00Z", -63_113_904_000), ("0000-12-30T00:00:00Z", -63_114_076_800),
            ("1582-10-04T00:00:00Z", -13_198_550_400), ("1582-10-15T00:00:00Z", -13_197_600_000),
            ("1000-03-01T00:00:00Z", -31_583_433_600), ("0001-12-31T00:00:00Z", -63_082_454_400)
        ]
        for (text, seconds) in cases {
            #expect(ValueText.format(Date(timeIntervalSinceReferenceDate: seconds)) == text)
            #expect(ValueText.parseDate(text)?.timeIntervalSinceReferenceDate == seconds, "\(text)")
        }
        // Years before 1 are astronomical: 0000 is 1 BC and leap (divisible by 400); -0001 is 2 BC.
        #expect(ValueText.parseDate("0000-02-29") != nil)
        #expect(ValueText.parseDate("1000-02-29") == nil, "a Julian leap day, not a Gregorian one")
        let bc = try #require(ValueText.parseDate("-0001-12-31T23:59:59Z"))
        #expect(bc.timeIntervalSinceReferenceDate == -63_114_076_800 - 86_400 * 365 + 86_399)
        #expect(ValueText.format(bc) == "-0001-12-31T23:59:59Z")
        #expect(
            ValueText.format(Date(timeIntervalSinceReferenceDate: bc.timeIntervalSinceReferenceDate + 1))
                == "0000-01-01T00:00:00Z")
    }

    @Test func impossibleDaysAreRefused() {
        for text in [
            "2023-02-29", "2024-02-30", "1900-02-29T00:00:00Z", "2023-04-31", "2023-13-01", "2016-12-31T23:59:60Z",
            "2020-06-01T12:00:60Z"
        ] {
            #expect(ValueText.parseDate(text) == nil, "\(text)")
        }
        #expect(ValueText.parseDate("2024-02-29") != nil)
        #expect(ValueText.parseDate("2000-02-29T12:00:00Z") != nil)
    }
}
