/// The names a snapshot's values can be kept under, sorted and without repeats: made once per
/// entity by a store and shared by every snapshot it reads of that entity.
///
/// Threading: a value type of immutable storage; sendable.
public struct PropertyNames: Sendable, Hashable {
    @usableFromInline let sorted: [String]

    public init(_ names: some Sequence<String>) {
        var names = Array(names)
        names.sort()
        var unique: [String] = []
        unique.reserveCapacity(names.count)
        for name in names where unique.last != name { unique.append(name) }
        sorted = unique
    }

    public static let none = PropertyNames([])

    /// The names, and the slot each of `names` has in values made on them, in the order given:
    /// what a store needs to fill values without looking names up.
    public static func slotted(_ names: [String]) -> (names: PropertyNames, slots: [Int]) {
        let list = PropertyNames(names)
        return (list, names.map { insertionIndex(of: $0, in: list.sorted) })
    }

    /// Where `name` is in `sorted`, or would go.
    @inlinable
    static func insertionIndex(of name: String, in sorted: [String]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = low + (high - low) / 2
            if sorted[mid] < name { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

/// A snapshot's values by property name: a slot per name of a sorted name list, nil where the
/// property has no value.
///
/// A snapshot is made for every row a store reads. A `Dictionary` per snapshot cost a hash table
/// allocation (a quarter or more of it empty), hashing every name on every insert and lookup, and
/// the names again in every table. Here a store gives the entity's ``PropertyNames`` once and every
/// snapshot of it shares that list: its own storage is one array of values, searched by a short
/// scan of the names (a binary search in entities with many properties). A name outside the list
/// is inserted in order (the list is then copied: rare, and only for that snapshot). It reads and
/// writes like a dictionary (`values["name"]`, `= nil` removes) and iterates its non-nil values
/// in name order; two compare equal when the same names hold the same values, whatever their
/// lists.
///
/// Threading: a value type; as thread-safe as its values.
public struct PropertyValues<Value: Sendable & Hashable>: Sendable {
    public typealias Element = (key: String, value: Value)

    @usableFromInline var names: [String]
    @usableFromInline var slots: [Value?]

    @inlinable
    public init() {
        names = []
        slots = []
    }

    /// No values yet, a slot for each of `layout`'s names.
    @inlinable
    public init(layout: PropertyNames) {
        names = layout.sorted
        slots = Array(repeating: nil, count: names.count)
    }

    @inlinable
    public init(_ dictionary: [String: Value]) {
        self.init(pairs: Array(dictionary))
    }

    /// The pairs by name; of pairs with the same name the last one wins.
    @inlinable
    init(pairs: [(String, Value)]) {
        // A stable sort keeps repeated names in their given order, so the last is kept.
        let sorted = pairs.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }
        names = []
        slots = []
        names.reserveCapacity(sorted.count)
        slots.reserveCapacity(sorted.count)
        for (_, (name, value)) in sorted {
            if names.last == name {
                slots[slots.count - 1] = value
            } else {
                names.append(name)
                slots.append(value)
            }
        }
    }

    /// Up to this many names a lookup scans: comparing a few short names for equality is cheaper
    /// than halving by ordered comparison.
    @inlinable
    static var scanLimit: Int { 16 }

    /// The position of `name`, or where it would go.
    @inlinable
    func position(of name: String) -> (index: Int, found: Bool) {
        if names.count <= Self.scanLimit {
            // Lengths first: comparing two different names calls into the runtime, comparing
            // their lengths does not (4 % of writing a sample store went to the calls).
            let length = name.utf8.count
            for i in names.indices where names[i].utf8.count == length && names[i] == name { return (i, true) }
            // Names compare as Unicode text, like a dictionary's keys: the same name in another
            // normalization form (another length in bytes) is found where it sorts.
            var i = 0
            while i < names.count && names[i] < name { i += 1 }
            return (i, i < names.count && names[i] == name)
        }
        let i = PropertyNames.insertionIndex(of: name, in: names)
        return (i, i < names.count && names[i] == name)
    }

    @inlinable
    public subscript(name: String) -> Value? {
        get {
            let (i, found) = position(of: name)
            return found ? slots[i] : nil
        }
        set {
            // Appending past the last name (how a dictionary-like build in name order goes)
            // needs no search.
            if let newValue, names.last.map({ $0 < name }) ?? true {
                names.append(name)
                slots.append(newValue)
                return
            }
            let (i, found) = position(of: name)
            if found {
                slots[i] = newValue
            } else if let newValue {
                names.insert(name, at: i)
                slots.insert(newValue, at: i)
            }
        }
    }

    /// Sets the value of the name in `slot` of the ``PropertyNames`` these values were made on,
    /// without looking the name up: for a store filling values it has just made on them, before
    /// any name outside them is added (which moves the slots after it).
    @inlinable
    public mutating func setValue(_ value: Value?, slot: Int) {
        slots[slot] = value
    }

    /// The names these values have slots for, sorted: the ``PropertyNames`` they were made on,
    /// shared by every value made on it (the same storage, so comparing two such lists costs
    /// nothing). With ``value(inSlot:)``, a reader of many values of one layout looks each name
    /// up once per layout instead of once per value.
    @inlinable
    public var slotNames: [String] { names }

    /// The value in `slot` of ``slotNames``; nil when it has none or there is no such slot.
    @inlinable
    public func value(inSlot slot: Int) -> Value? {
        slot >= 0 && slot < slots.count ? slots[slot] : nil
    }

    /// The number of non-nil values.
    @inlinable
    public var count: Int {
        var n = 0
        for slot in slots where slot != nil { n += 1 }
        return n
    }

    @inlinable
    public var isEmpty: Bool { !slots.contains { $0 != nil } }

    /// The names that have values, sorted.
    @inlinable
    public var keys: [String] { map(\.key) }

    @discardableResult
    @inlinable
    public mutating func removeValue(forKey name: String) -> Value? {
        let old = self[name]
        self[name] = nil
        return old
    }

    /// The values transformed, as a dictionary by name.
    @inlinable
    public func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> [String: T] {
        var result: [String: T] = Dictionary(minimumCapacity: count)
        for (name, value) in self { result[name] = try transform(value) }
        return result
    }

    /// The pairs as a dictionary (for callers that need one).
    @inlinable
    public var dictionary: [String: Value] {
        var result: [String: Value] = Dictionary(minimumCapacity: count)
        for (name, value) in self { result[name] = value }
        return result
    }

    /// The bytes this holds beyond its two array headers, for the row cache's limit. A shared
    /// name list is not counted: one per entity, not per snapshot.
    var storageBytes: Int {
        slots.isEmpty ? 0 : 32 + slots.count * MemoryLayout<Value?>.stride
    }
}

extension PropertyValues: Sequence {
    public struct Iterator: IteratorProtocol {
        @usableFromInline let names: [String]
        @usableFromInline let slots: [Value?]
        @usableFromInline var index = 0

        @inlinable init(names: [String], slots: [Value?]) {
            self.names = names
            self.slots = slots
        }

        @inlinable
        public mutating func next() -> Element? {
            while index < slots.count {
                defer { index += 1 }
                if let value = slots[index] { return (names[index], value) }
            }
            return nil
        }
    }

    @inlinable
    public func makeIterator() -> Iterator { Iterator(names: names, slots: slots) }
}

extension PropertyValues: Hashable {
    /// Equal when the same names hold the same values; nil slots and the name lists they come
    /// from do not matter.
    @inlinable
    public static func == (lhs: Self, rhs: Self) -> Bool {
        if lhs.names == rhs.names { return lhs.slots == rhs.slots }
        var l = lhs.makeIterator()
        var r = rhs.makeIterator()
        while true {
            switch (l.next(), r.next()) {
            case (nil, nil): return true
            case (let a?, let b?): if a.key != b.key || a.value != b.value { return false }
            default: return false
            }
        }
    }

    @inlinable
    public func hash(into hasher: inout Hasher) {
        var n = 0
        for (name, value) in self {
            hasher.combine(name)
            hasher.combine(value)
            n += 1
        }
        hasher.combine(n)
    }
}

extension PropertyValues: ExpressibleByDictionaryLiteral {
    @inlinable
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(pairs: elements)
    }
}

extension PropertyValues: CustomStringConvertible {
    public var description: String { dictionary.description }
}
