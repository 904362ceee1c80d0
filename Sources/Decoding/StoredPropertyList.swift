import Foundation
import ObjectGraph

/// Reads the property lists stores keep of their own (their metadata: SQLite's and PostgreSQL's
/// `Z_PLIST`, an XML store's `<metadata>`, a binary store's metadata section), binary or XML,
/// with the project's bounded readers (``BinaryPropertyList``, ``XMLPropertyListReader``).
///
/// A store is outside input: Foundation's `PropertyListSerialization` recurses without a bound
/// (a list nested a few hundred thousand levels deep ended the process), so it never reads one.
/// The readers bound nesting; ``maximumValues`` bounds what shared references of a binary list
/// expand to (an array of N references to an array of N references, and so on, is N^depth values).
///
/// Stateless; safe from any thread.
public enum StoredPropertyList {
    /// Values a store's metadata may hold, counted as they are expanded: far above any real
    /// store's (a few hundred), far below what would exhaust memory.
    public static let maximumValues = 1_000_000

    /// The dictionary the property list `data` holds; `source` names it in errors.
    ///
    /// - Throws: ``ObjectGraphError/Code/corruptStore`` saying what is wrong: not a property
    ///   list, too deep, too many values, a value metadata cannot hold, not a dictionary.
    public static func dictionary(_ data: Data, source: String) throws(ObjectGraphError) -> [String: MetadataValue] {
        let parsed: PropertyListValue
        if BinaryPropertyList.looksLikeBinaryPropertyList(data) {
            do {
                parsed = try BinaryPropertyList.parse(data, source: source)
            } catch {
                throw ObjectGraphError(.corruptStore, error.message)
            }
        } else if let xml = XMLPropertyListReader.parse(data) {
            parsed = xml
        } else {
            throw ObjectGraphError(
                .corruptStore,
                "\(source) is not a property list (or nests deeper than \(XMLInputCheck.maximumDepth) levels)")
        }
        var budget = maximumValues
        guard case .dictionary(let values) = try value(parsed, budget: &budget, source: source) else {
            throw ObjectGraphError(.corruptStore, "\(source) is not a dictionary")
        }
        return values
    }

    /// `value` as metadata, each value counted against `budget`. Recursion is bounded by the
    /// readers' nesting bounds.
    private static func value(_ value: PropertyListValue, budget: inout Int, source: String) throws(ObjectGraphError)
        -> MetadataValue
    {
        budget -= 1
        guard budget >= 0 else {
            throw ObjectGraphError(.corruptStore, "\(source) holds more than \(maximumValues) values")
        }
        switch value {
        case .boolean(let b): return .boolean(b)
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .date(let seconds):
            guard seconds.isFinite else {
                throw ObjectGraphError(.corruptStore, "\(source) holds a date that is not finite")
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case .data(let d): return .data(d)
        case .string(let s): return .string(s)
        case .uid(let n):
            // XML's `<dict><key>CF$UID</key>…` reads as a reference; in metadata it is a dictionary.
            return .dictionary(["CF$UID": .integer(Int64(n))])
        case .null: throw ObjectGraphError(.corruptStore, "\(source) holds a null, which metadata cannot hold")
        case .array(let items):
            var result: [MetadataValue] = []
            for item in items { result.append(try self.value(item, budget: &budget, source: source)) }
            return .array(result)
        case .dictionary(let entries):
            var result: [String: MetadataValue] = [:]
            for entry in entries {
                guard case .string(let key) = entry.key else {
                    throw ObjectGraphError(.corruptStore, "\(source) holds a dictionary key that is not a string")
                }
                result[key] = try self.value(entry.value, budget: &budget, source: source)
            }
            return .dictionary(result)
        }
    }
}
