import Foundation

/// One value of a store's metadata dictionary: the property-list types Core Data allows there.
public enum MetadataValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([MetadataValue])
    case dictionary([String: MetadataValue])

    /// Converts a Foundation property-list object (what `PropertyListSerialization` returns).
    ///
    /// - Throws: ``ObjectGraphError/Code/corruptStore`` for a type a property list cannot hold.
    public init(propertyList value: Any) throws(ObjectGraphError) {
        switch value {
        case let v as String: self = .string(v)
        // Property-list booleans decode as Swift Bool; numbers as NSNumber tagged with their C type.
        case let v as Bool where type(of: value) == Bool.self: self = .boolean(v)
        case let v as NSNumber:
            let cType = String(cString: v.objCType)
            if cType == "c" || cType == "B" {
                self = .boolean(v.boolValue)
            } else if cType == "d" || cType == "f" {
                self = .real(v.doubleValue)
            } else {
                self = .integer(v.int64Value)
            }
        case let v as Date: self = .date(v)
        case let v as Data: self = .data(v)
        case let v as [Any]:
            self = .array(try v.map { (e) throws(ObjectGraphError) in try MetadataValue(propertyList: e) })
        case let v as [String: Any]:
            var dict: [String: MetadataValue] = [:]
            for (k, e) in v { dict[k] = try MetadataValue(propertyList: e) }
            self = .dictionary(dict)
        default:
            throw ObjectGraphError(.corruptStore, "metadata holds a value of unsupported type \(type(of: value))")
        }
    }

    /// The Foundation property-list object for this value.
    public var propertyList: Any {
        switch self {
        case .string(let v): v
        case .integer(let v): NSNumber(value: v)
        case .real(let v): NSNumber(value: v)
        case .boolean(let v): v
        case .date(let v): v
        case .data(let v): v
        case .array(let v): v.map(\.propertyList)
        case .dictionary(let v): v.mapValues(\.propertyList)
        }
    }
}
