import Foundation

/// How an Xcode `contents` file spells attribute values: `defaultValueString`, `minValueString`,
/// `maxValueString` and the `…DateTimeInterval` attributes.
///
/// Loader and writer share these functions so that every value the writer emits parses back to the
/// same bits. Stateless; safe from any thread.
enum XcodeValueFormat {
    /// Parses a `defaultValueString` for an attribute of `type`, or nil if it is not one.
    ///
    /// Binary, transformable, object-ID and undefined attributes have no textual default in Xcode,
    /// so any string is refused for them.
    static func defaultValue(_ string: String, of type: AttributeType) -> AttributeValue? {
        switch type {
        case .integer16, .integer32, .integer64:
            guard let value = Int64(string.trimmingCharacters(in: .whitespaces)),
                let range = type.integerRange, range.contains(value)
            else { return nil }
            return .integer(value)
        case .decimal:
            return decimal(string).map(AttributeValue.decimal)
        case .double:
            return Double(string.trimmingCharacters(in: .whitespaces)).map(AttributeValue.double)
        case .float:
            return Float(string.trimmingCharacters(in: .whitespaces)).map(AttributeValue.float)
        case .boolean:
            switch string.trimmingCharacters(in: .whitespaces).lowercased() {
            case "yes", "true", "1": return .boolean(true)
            case "no", "false", "0": return .boolean(false)
            default: return nil
            }
        case .string, .uri:
            return .string(string)
        case .date:
            return date(fromDisplayString: string).map(AttributeValue.date)
        case .uuid:
            return UUID(uuidString: string.trimmingCharacters(in: .whitespaces)).map(AttributeValue.uuid)
        case .binaryData, .transformable, .objectID, .undefined:
            return nil
        }
    }

    /// Parses a `minValueString` / `maxValueString`: a value of the attribute's type for numbers
    /// and dates, a length for strings, URIs and data, or nil if the string is not one or the type
    /// has no range.
    static func bound(_ string: String, of type: AttributeType) -> AttributeValue? {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .date:
            return defaultValue(string, of: type)
        case .string, .uri, .binaryData, .transformable:
            guard let length = Int64(string.trimmingCharacters(in: .whitespaces)), length >= 0 else {
                return nil
            }
            return .integer(length)
        case .boolean, .uuid, .objectID, .undefined:
            return nil
        }
    }

    /// Parses a `…DateTimeInterval` attribute: seconds since 2001-01-01 00:00:00 UTC.
    static func date(fromInterval string: String) -> Date? {
        guard let seconds = Double(string.trimmingCharacters(in: .whitespaces)), seconds.isFinite else {
            return nil
        }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// Parses the display form Xcode writes next to a date interval ("2013-04-23 12:00:00 +0000"),
    /// for files that carry only that form. Without a zone the date is taken as UTC.
    static func date(fromDisplayString string: String) -> Date? {
        let trimmed = string.trimmingCharacters(in: .whitespaces)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
    }

    /// Parses a decimal number strictly: `Decimal(string:)` alone accepts "1abc" as 1.
    static func decimal(_ string: String) -> Decimal? {
        let trimmed = string.trimmingCharacters(in: .whitespaces)
        var sawDigit = false
        var index = trimmed.startIndex
        func skipDigits() {
            while index < trimmed.endIndex, trimmed[index].isASCII, trimmed[index].isNumber {
                sawDigit = true
                index = trimmed.index(after: index)
            }
        }
        if index < trimmed.endIndex, trimmed[index] == "-" || trimmed[index] == "+" {
            index = trimmed.index(after: index)
        }
        skipDigits()
        if index < trimmed.endIndex, trimmed[index] == "." {
            index = trimmed.index(after: index)
            skipDigits()
        }
        guard sawDigit else { return nil }
        if index < trimmed.endIndex, trimmed[index] == "e" || trimmed[index] == "E" {
            index = trimmed.index(after: index)
            if index < trimmed.endIndex, trimmed[index] == "-" || trimmed[index] == "+" {
                index = trimmed.index(after: index)
            }
            sawDigit = false
            skipDigits()
            guard sawDigit else { return nil }
        }
        guard index == trimmed.endIndex else { return nil }
        return Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX"))
    }

    // MARK: - Writing

    /// The `…ValueString` spelling of `value`, or nil for data, which Xcode cannot spell.
    ///
    /// Doubles and floats use Swift's shortest round-trip form, so reading gives the same bits.
    static func string(for value: AttributeValue) -> String? {
        switch value {
        case .integer(let v): String(v)
        case .decimal(let v): v.description
        case .double(let v): "\(v)"
        case .float(let v): "\(v)"
        case .string(let v): v
        case .boolean(let v): v ? "YES" : "NO"
        case .date(let v): displayString(for: v)
        case .uuid(let v): v.uuidString
        case .data: nil
        }
    }

    /// The `…DateTimeInterval` spelling of `date`: whole seconds as an integer, as Xcode writes it.
    static func intervalString(for date: Date) -> String {
        let seconds = date.timeIntervalSinceReferenceDate
        if seconds == seconds.rounded(), abs(seconds) < 1e15, seconds.sign == .plus || seconds != 0 {
            return String(Int64(seconds))
        }
        return "\(seconds)"
    }

    /// The display form Xcode writes beside a date interval.
    static func displayString(for date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return formatter.string(from: date)
    }
}
