import Foundation

/// A decimal's text and its nearest Double, computed from its significand and exponent when the
/// significand fits in 64 bits. Foundation's `Decimal.description` divides the 128-bit mantissa
/// by ten once per digit: it was 7 % of writing a sample store or migrating one, and 3 % of
/// listing folders (every decimal file's size is its text's length).
public enum DecimalConversion {
    /// The decimal as `Decimal.description` writes it (`-12.5`, `0.05`, `1000`, `NaN`).
    public static func text(_ value: Decimal) -> String {
        let exponent = value.exponent
        guard !value.isNaN, (-64...64).contains(exponent), let significand = significand(of: value) else {
            return value.description
        }
        if significand == 0 { return "0" }
        var digits = String(significand)
        if exponent >= 0 {
            digits += String(repeating: "0", count: exponent)
        } else if digits.count > -exponent {
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: exponent))
        } else {
            digits = "0." + String(repeating: "0", count: -exponent - digits.count) + digits
        }
        return value.sign == .minus ? "-" + digits : digits
    }

    /// The Double nearest the decimal, as `Double(text(value))` reads it (NaN for NaN).
    /// `NSDecimalNumber.doubleValue` is not correctly rounded on Linux (41777.24 became
    /// 41777.240000000005).
    public static func double(_ value: Decimal) -> Double? {
        let exponent = value.exponent
        // A significand below 2^53 and a power of ten up to 10^22 are exact Doubles, so one
        // multiplication or division rounds once, correctly (Clinger's fast path).
        if !value.isNaN, (-22...22).contains(exponent), let significand = significand(of: value), significand < 1 << 53
        {
            var power = 1.0
            for _ in 0..<exponent.magnitude { power *= 10 }
            let magnitude = exponent >= 0 ? Double(significand) * power : Double(significand) / power
            return value.sign == .minus ? -magnitude : magnitude
        }
        return Double(text(value))
    }

    /// The decimal a text spells, as `Decimal(string:locale:)` reads it in the POSIX locale
    /// (nil when it reads none). Plain notation (`-12.50`: a sign, up to 18 digits, a point) is
    /// read here: Foundation's reading was 6 % of opening a binary store.
    public static func decimal(_ text: String) -> Decimal? {
        plainDecimal(text) ?? Decimal(string: text, locale: posix)
    }

    private static let posix = Locale(identifier: "en_US_POSIX")

    private static func plainDecimal(_ text: String) -> Decimal? {
        var significand: UInt64 = 0
        var digits = 0
        var fractionDigits = 0
        var negative = false
        var point = false
        for (index, byte) in text.utf8.enumerated() {
            switch byte {
            case 0x2D where index == 0:
                negative = true
            case 0x2E where !point && digits > 0:
                point = true
            case 0x30...0x39:
                digits += 1
                // 18 digits always fit in 64 bits.
                guard digits <= 18 else { return nil }
                significand = significand * 10 + UInt64(byte - 0x30)
                if point { fractionDigits += 1 }
            default:
                return nil
            }
        }
        guard digits > 0, !point || fractionDigits > 0 else { return nil }
        // Foundation keeps the exponent of some zeros (`0.000`) and not of others (`-0.00`); a
        // zero is left to it.
        guard significand != 0 else { return nil }
        return Decimal(sign: negative ? .minus : .plus, exponent: -fractionDigits, significand: Decimal(significand))
    }

    /// The significand as an integer, when it fits in 64 bits (checked by converting it back).
    private static func significand(of value: Decimal) -> Int64? {
        let significand = value.significand
        let integer = NSDecimalNumber(decimal: significand).int64Value
        guard integer >= 0, Decimal(integer) == significand else { return nil }
        return integer
    }
}
