import Foundation
import ObjectGraph
import Testing

/// The fast decimal conversions must give exactly what Foundation's text gives: file contents,
/// XML and binary stores are written from the text, SQLite columns from the Double.
@Suite struct DecimalConversionTests {
    static let edges: [Decimal] = [
        Decimal(sign: .plus, exponent: -2, significand: 150), Decimal(sign: .minus, exponent: 0, significand: 0),
        Decimal(sign: .plus, exponent: 5, significand: 0), Decimal(sign: .minus, exponent: -3, significand: 5),
        Decimal(sign: .plus, exponent: 100, significand: 7), Decimal(sign: .minus, exponent: -100, significand: 7),
        Decimal(string: "41777.24")!, Decimal(string: "1e10")!, Decimal(string: "-0.000123")!,
        Decimal(string: "123456789012345678901234567890")!, Decimal(string: "9223372036854775807")!,
        Decimal(string: "9223372036854775808")!, Decimal(string: "18446744073709551616")!,
        Decimal(string: "-9223372036854775808")!, Decimal(string: "9007199254740993")!,
        Decimal(string: "0.1")!, Decimal(string: "1e22")!, Decimal(string: "1e23")!, Decimal(string: "1e-22")!,
        Decimal.greatestFiniteMagnitude, Decimal.leastNonzeroMagnitude, -Decimal.greatestFiniteMagnitude, Decimal.nan
    ]

    /// Significands of every width from 0 to 64 bits, exponents from -70 to 70, both signs.
    static func randomDecimals(_ count: Int) -> [Decimal] {
        var random = SplitMix64(seed: 14)
        return (0..<count).map { _ in
            let significand = random.next() >> UInt64.random(in: 0...64, using: &random)
            return Decimal(
                sign: Bool.random(using: &random) ? .plus : .minus, exponent: Int.random(in: -70...70, using: &random),
                significand: Decimal(significand))
        }
    }

    @Test func theTextIsFoundationsText() {
        let mismatches = (Self.edges + Self.randomDecimals(100_000)).filter {
            DecimalConversion.text($0) != $0.description
        }
        #expect(
            mismatches.isEmpty,
            "first: \(mismatches.prefix(5).map { "\($0.description) → \(DecimalConversion.text($0))" })")
    }

    @Test func theDoubleIsTheCorrectlyRoundedReadingOfTheText() {
        let mismatches = (Self.edges + Self.randomDecimals(100_000)).filter { value in
            guard let fast = DecimalConversion.double(value) else { return !value.isNaN }
            // Both zeros read as zero; every other value must be the same Double bit for bit.
            let read = Double(value.description) ?? .nan
            return !(fast == 0 && read == 0) && fast.bitPattern != read.bitPattern
        }
        #expect(mismatches.isEmpty, "first: \(mismatches.prefix(5).map(\.description))")
        #expect(DecimalConversion.double(Decimal(string: "41777.24")!) == 41777.24)
    }

    @Test func readingATextGivesFoundationsDecimal() {
        var random = SplitMix64(seed: 15)
        var texts = [
            "0", "-0", "00", "007.50", "1.50", "-12.5", "0.000", "123456789012345678", "1234567890123456789",
            "-999999999999999999", "0.000000000000000001", "1abc", "+1", ".5", "1.", "1e5", "", "-", "--1", "1..2",
            " 1", "1 ", "٣", "1,5", "12.5.", "-.5", "41777.24"
        ]
        for _ in 0..<50_000 {
            let whole = String(random.next() >> UInt64.random(in: 0...64, using: &random))
            let fraction = String(random.next() >> UInt64.random(in: 0...64, using: &random))
            let zeros = String(repeating: "0", count: Int.random(in: 0...3, using: &random))
            let sign = Bool.random(using: &random) ? "-" : ""
            texts.append(sign + zeros + whole + (Bool.random(using: &random) ? "." + zeros + fraction : ""))
            // How SQLite's REAL values are read: Swift's shortest text of a Double.
            texts.append("\(Double(bitPattern: random.next()))")
        }
        let mismatches = texts.filter { text in
            let fast = DecimalConversion.decimal(text)
            let foundation = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
            guard let fast, let foundation else { return (fast == nil) != (foundation == nil) }
            return fast != foundation || fast.description != foundation.description
                || fast.exponent != foundation.exponent
                || fast.significand != foundation.significand
        }
        #expect(mismatches.isEmpty, "first: \(mismatches.prefix(5))")
    }
}
