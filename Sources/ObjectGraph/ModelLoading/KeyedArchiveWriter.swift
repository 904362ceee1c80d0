import Foundation

/// Builds an `NSKeyedArchiver` archive: `$objects` entries that refer to each other by UID, class
/// records shared by name, `$top` naming the root. Objects may refer to each other in cycles (an
/// entity and its model): ``reserve()`` hands out a UID before the object's fields are known.
///
/// A value used once; not shared between threads.
public struct KeyedArchiveWriter {
    private var objects: [PropertyListValue] = [.string("$null")]
    private var classRecords: [String: Int] = [:]

    public init() {}

    /// A UID for an object whose content comes later (``set(_:className:classes:fields:)``).
    public mutating func reserve() -> Int {
        objects.append(.null)
        return objects.count - 1
    }

    /// The content of object `uid`: an instance of `className` (with its superclasses `classes`,
    /// most derived first) with `fields`.
    public mutating func set(_ uid: Int, className: String, classes: [String], fields: [(String, PropertyListValue)]) {
        let classUID = classRecord(className, classes)
        var entries: [(key: PropertyListValue, value: PropertyListValue)] = fields.map { (.string($0.0), $0.1) }
        entries.append((.string("$class"), .uid(classUID)))
        objects[uid] = .dictionary(entries)
    }

    /// A new object of `className` with `fields`.
    public mutating func add(className: String, classes: [String], fields: [(String, PropertyListValue)])
        -> PropertyListValue
    {
        let uid = reserve()
        set(uid, className: className, classes: classes, fields: fields)
        return .uid(uid)
    }

    /// A plain value (a string, a number) stored as an object of its own, as archivers store
    /// strings; nil gives the `$null` reference.
    public mutating func add(_ value: PropertyListValue?) -> PropertyListValue {
        guard let value else { return .uid(0) }
        objects.append(value)
        return .uid(objects.count - 1)
    }

    /// `add(.string(text))`, or `$null` for nil.
    public mutating func string(_ text: String?) -> PropertyListValue { add(text.map(PropertyListValue.string)) }

    public mutating func array(_ items: [PropertyListValue], className: String = "NSArray") -> PropertyListValue {
        add(
            className: className,
            classes: className == "NSArray" ? ["NSArray", "NSObject"] : [className, "NSArray", "NSObject"],
            fields: [("NS.objects", .array(items))])
    }

    public mutating func dictionary(
        _ entries: [(PropertyListValue, PropertyListValue)], className: String = "NSDictionary"
    )
        -> PropertyListValue
    {
        add(
            className: className,
            classes: className == "NSDictionary"
                ? ["NSDictionary", "NSObject"] : [className, "NSDictionary", "NSObject"],
            fields: [("NS.keys", .array(entries.map(\.0))), ("NS.objects", .array(entries.map(\.1)))])
    }

    private mutating func classRecord(_ name: String, _ classes: [String]) -> Int {
        if let known = classRecords[name] { return known }
        objects.append(
            .dictionary([
                (.string("$classname"), .string(name)),
                (.string("$classes"), .array(classes.map(PropertyListValue.string)))
            ]))
        classRecords[name] = objects.count - 1
        return objects.count - 1
    }

    /// The archive with `root` as `$top.root`.
    public func finish(root: Int) -> Data {
        BinaryPropertyListWriter.encode(
            .dictionary([
                (.string("$version"), .integer(100000)), (.string("$archiver"), .string("NSKeyedArchiver")),
                (.string("$top"), .dictionary([(.string("root"), .uid(root))])), (.string("$objects"), .array(objects))
            ]))
    }
}
