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

    /// The Double nearest the decimal, as `Double(text(value))` reads it; nil for NaN.
    /// `NSDecimalNumber.doubleValue` is not correctly rounded on Linux (41777.24 became
    /// 41777.240000000005).
    public static func double(_ value: Decimal) -> Double? {
        let exponent = value.exponent
        // A significand below 2^53 and a power of ten up to 10^22 are exact Doubles, so one
        // multiplication or division rounds once, correctly (Clinger's fast path).
        if !value.isNaN, (-22...22).contains(exponent), let significand = significand(of: value), significand < 1 << 53 {
            var power = 1.0
            for _ in 0..<exponent.magnitude { power *= 10 }
            let magnitude = exponent >= 0 ? Double(significand) * power : Double(significand) / power
            return value.sign == .minus ? -magnitude : magnitude
        }
        return Double(text(value))
    }

    /// The significand as an integer, when it fits in 64 bits (checked by converting it back).
    private static func significand(of value: Decimal) -> Int64? {
        let significand = value.significand
        let integer = NSDecimalNumber(decimal: significand).int64Value
        guard integer >= 0, Decimal(integer) == significand else { return nil }
        return integer
    }
}
