import Foundation

/// An `NSKeyedArchiver` archive: the `$objects` table of a binary property list, whose entries
/// refer to each other by UID, and the `$top` entries that root the graph.
///
/// The graph may have cycles (an entity names its model, a relationship its inverse); nothing
/// here follows references on its own, so a cycle costs nothing. Callers follow one reference at
/// a time with ``object(_:)`` and bound their own walks. Every lookup is checked: a UID out of
/// range, an entry of the wrong kind or a class record that is not one give an error naming the
/// archive, never a crash. Threading: a value; share it freely.
public struct KeyedArchive: Sendable {
    /// Where the archive came from, for messages.
    public let source: String
    let objects: [PropertyListValue]
    let top: PropertyListValue

    /// Parses an archive from binary property list bytes.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` when the bytes are not a binary property
    ///   list or not a keyed archive.
    public init(data: Data, source: String) throws(ObjectGraphError) {
        let root = try BinaryPropertyList.parse(data, source: source)
        self.source = source
        guard root["$archiver"]?.string == "NSKeyedArchiver" else {
            throw ObjectGraphError(.invalidModel, "\(source): a property list, but not an NSKeyedArchiver archive")
        }
        guard let objects = root["$objects"]?.array, let top = root["$top"], case .dictionary = top else {
            throw ObjectGraphError(
                .invalidModel, "\(source): keyed archive without its $objects array or $top dictionary")
        }
        self.objects = objects
        self.top = top
    }

    /// The object `$top[key]` names.
    public func topObject(_ key: String) throws(ObjectGraphError) -> ArchivedObject {
        guard case .uid(let uid)? = top[key] else {
            throw failure("has no $top entry \(key)")
        }
        guard let object = try object(uid) else { throw failure("$top entry \(key) is $null") }
        return object
    }

    /// The object UID `uid` refers to; nil for UID 0 (`$null`).
    public func object(_ uid: Int) throws(ObjectGraphError) -> ArchivedObject? {
        guard uid >= 0, uid < objects.count else {
            throw failure("refers to object \(uid), but $objects has \(objects.count)")
        }
        if uid == 0 { return nil }
        let value = objects[uid]
        if case .string("$null") = value { return nil }
        var className: String?
        var classes: [String] = []
        if case .uid(let classUID)? = value["$class"] {
            guard classUID > 0, classUID < objects.count, let name = objects[classUID]["$classname"]?.string else {
                throw failure("object \(uid) has a $class entry that is not a class record")
            }
            className = name
            classes = objects[classUID]["$classes"]?.array?.compactMap(\.string) ?? [name]
        }
        return ArchivedObject(archive: self, uid: uid, value: value, className: className, classes: classes)
    }

    func failure(_ message: String) -> ObjectGraphError {
        ObjectGraphError(.invalidModel, "\(source): keyed archive \(message)")
    }
}

/// One entry of a keyed archive's `$objects`, with its class (nil for plain property list values
/// stored inline: strings, numbers, data).
public struct ArchivedObject: Sendable {
    public let archive: KeyedArchive
    /// The entry's UID: its identity, for callers that meet the same object twice.
    public let uid: Int
    /// The entry itself: a dictionary of encoded keys for class instances, or a plain value.
    public let value: PropertyListValue
    public let className: String?
    /// The class and its superclasses, as archived (`NSMutableArray`, `NSArray`, `NSObject`).
    public let classes: [String]

    /// Whether the object is an instance of `name` or of one of its subclasses.
    public func isKind(of name: String) -> Bool { classes.contains(name) || className == name }

    /// The raw value encoded for `key`.
    public subscript(key: String) -> PropertyListValue? { value[key] }

    /// The object encoded by reference for `key`; nil when absent or `$null`.
    public func object(_ key: String) throws(ObjectGraphError) -> ArchivedObject? {
        switch value[key] {
        case nil, .null?: return nil
        case .uid(let uid)?: return try archive.object(uid)
        case let other?:
            // Inline values (a number stored without a reference) are presented as objects too.
            return ArchivedObject(archive: archive, uid: -1, value: other, className: nil, classes: [])
        }
    }

    /// A string encoded for `key`: inline, or an NSString / NSMutableString object.
    public func string(_ key: String) throws(ObjectGraphError) -> String? {
        try object(key)?.stringValue()
    }

    /// This object as a string, when it is one.
    public func stringValue() throws(ObjectGraphError) -> String? {
        if case .string(let s) = value { return s }
        if isKind(of: "NSString"), let s = value["NS.string"]?.string { return s }
        if isKind(of: "NSString"), case .data(let bytes)? = value["NS.bytes"] {
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    /// The boolean or number encoded for `key`, as a truth value; `defaultValue` when absent.
    public func bool(_ key: String, default defaultValue: Bool = false) -> Bool {
        value[key]?.bool ?? defaultValue
    }

    /// The integer encoded for `key`.
    public func integer(_ key: String) -> Int64? { value[key]?.integer }

    /// The elements of an NSArray, NSSet or NSOrderedSet object (`NS.objects`), each followed.
    /// `$null` elements are dropped.
    public func elements() throws(ObjectGraphError) -> [ArchivedObject] {
        guard case .array(let items)? = value["NS.objects"] else {
            throw archive.failure("object \(uid) (\(className ?? "a plain value")) is not an array or set")
        }
        return try follow(items)
    }

    /// The entries of an NSDictionary (`NS.keys`/`NS.objects`) or of Core Data's
    /// NSKnownKeysDictionary (`searchMapping` keys, `values`), with string keys, in archive order.
    public func entries() throws(ObjectGraphError) -> [(key: String, value: ArchivedObject)] {
        var keys: [ArchivedObject]
        var values: [ArchivedObject?]
        if case .array(let keyRefs)? = value["NS.keys"], case .array(let valueRefs)? = value["NS.objects"] {
            keys = try follow(keyRefs)
            values = try valueRefs.map { (v) throws(ObjectGraphError) in try resolve(v) }
            guard keyRefs.count == valueRefs.count else {
                throw archive.failure("dictionary \(uid) has \(keyRefs.count) keys but \(valueRefs.count) values")
            }
        } else if let mapping = try object("searchMapping"), let table = try object("values") {
            // NSKnownKeysDictionary: the keys live in the mapping strategy, the values in an array.
            guard let keyArray = try mapping.object("keys") else {
                throw archive.failure("known-keys dictionary \(uid) has no keys")
            }
            keys = try keyArray.elements()
            guard case .array(let valueRefs)? = table.value["NS.objects"] else {
                throw archive.failure("known-keys dictionary \(uid) has no value array")
            }
            // Core Data fills unused slots with a marker string, named by `emptyToken`.
            let emptySlot = value["emptyToken"]
            values = try valueRefs.map { (v) throws(ObjectGraphError) in v == emptySlot ? nil : try resolve(v) }
            guard keys.count <= values.count else {
                throw archive.failure("known-keys dictionary \(uid) has \(keys.count) keys but \(values.count) values")
            }
        } else {
            throw archive.failure("object \(uid) (\(className ?? "a plain value")) is not a dictionary")
        }
        var result: [(key: String, value: ArchivedObject)] = []
        for (key, value) in zip(keys, values) {
            guard let name = try key.stringValue() else {
                throw archive.failure("dictionary \(uid) has a key that is not a string")
            }
            if let value { result.append((name, value)) }
        }
        return result
    }

    private func resolve(_ item: PropertyListValue) throws(ObjectGraphError) -> ArchivedObject? {
        switch item {
        case .uid(let uid): return try archive.object(uid)
        case .null: return nil
        default: return ArchivedObject(archive: archive, uid: -1, value: item, className: nil, classes: [])
        }
    }

    private func follow(_ items: [PropertyListValue]) throws(ObjectGraphError) -> [ArchivedObject] {
        var result: [ArchivedObject] = []
        result.reserveCapacity(items.count)
        for item in items {
            if let object = try resolve(item) { result.append(object) }
        }
        return result
    }
}
