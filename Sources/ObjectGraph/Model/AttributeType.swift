import Foundation

/// The type of an attribute, named as Xcode's model editor names it.
///
/// The raw value is the `attributeType` string of an Xcode `contents` file, so a model reads and
/// writes without a translation table.
public enum AttributeType: String, Sendable, Hashable, CaseIterable {
    case integer16 = "Integer 16"
    case integer32 = "Integer 32"
    case integer64 = "Integer 64"
    case decimal = "Decimal"
    case double = "Double"
    case float = "Float"
    case string = "String"
    case boolean = "Boolean"
    case date = "Date"
    case binaryData = "Binary"
    case uuid = "UUID"
    case uri = "URI"
    case transformable = "Transformable"
    /// Core Data's `NSObjectIDAttributeType`; only appears in expressions, never stored.
    case objectID = "ObjectID"
    /// Core Data's `NSUndefinedAttributeType`; only legal on transient attributes.
    case undefined = "Undefined"

    /// The numeric code Core Data uses for the type (`NSAttributeType`).
    public var coreDataCode: Int {
        switch self {
        case .undefined: 0
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binaryData: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        case .objectID: 2000
        }
    }

    /// Whether values of this type are integers, and so carry an integer range.
    public var isInteger: Bool {
        self == .integer16 || self == .integer32 || self == .integer64
    }

    /// The inclusive range an integer attribute of this type can hold.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }
}

extension AttributeType {
    /// The value a new object gets for a mandatory attribute without a default (a folder made by
    /// mkdir), to be overwritten: zero, empty, false, the reference date, the nil UUID. Nil for
    /// types that have none.
    public var zeroValue: AttributeValue? {
        switch self {
        case .integer16, .integer32, .integer64: .integer(0)
        case .decimal: .decimal(0)
        case .double: .double(0)
        case .float: .float(0)
        case .string, .uri: .string("")
        case .boolean: .boolean(false)
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .binaryData, .transformable: .data(Data())
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .objectID, .undefined: nil
        }
    }
}
