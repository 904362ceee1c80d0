import Foundation

/// An object named across two stores: its entity's name and its key (`Employee/p12`), which is
/// what stays the same when a store is copied or migrated.
public struct ObjectReference: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var entityName: String
    public var key: PrimaryKey

    public init(entityName: String, key: PrimaryKey) {
        self.entityName = entityName
        self.key = key
    }

    public static func < (a: ObjectReference, b: ObjectReference) -> Bool {
        (a.entityName, a.key) < (b.entityName, b.key)
    }

    public var description: String { "\(entityName)/\(key)" }
}

/// How one object differs between two stores.
public struct ObjectDifference: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// Only in the second store.
        case inserted
        /// Only in the first store.
        case deleted
        /// In both, with properties that differ.
        case updated
    }

    /// One property that differs, with its value on each side (nil where it is nil, or where the
    /// side's model lacks the property).
    public enum Property: Sendable, Hashable {
        case attribute(name: String, type: AttributeType, old: AttributeValue?, new: AttributeValue?)
        case toOne(name: String, old: ObjectReference?, new: ObjectReference?)
        /// `removed` and `added` by reference; `old` and `new` are the whole lists in order, for
        /// telling a reordering of an ordered relationship (both lists empty when it is not one).
        case toMany(
            name: String, removed: [ObjectReference], added: [ObjectReference], old: [ObjectReference],
            new: [ObjectReference])

        public var name: String {
            switch self {
            case .attribute(let name, _, _, _), .toOne(let name, _, _), .toMany(let name, _, _, _, _): name
            }
        }
    }

    public var kind: Kind
    public var object: ObjectReference
    /// For updates, the properties that differ, in the model's order; empty otherwise.
    public var properties: [Property]

    public init(kind: Kind, object: ObjectReference, properties: [Property] = []) {
        self.kind = kind
        self.object = object
        self.properties = properties
    }
}

/// Compares the objects of two stores of one model, object by object: which exist only in one,
/// and for those in both, which attributes and relationships differ.
///
/// Objects match by entity name and key (an object whose entity differs is deleted in one
/// entity and inserted in the other). Both stores are read in pages of the same entity in key
/// order and merged (``ObjectRecordPages``: a few store requests per page on each side, never one
/// per object), so memory holds two pages whatever the stores' size. Properties match by name;
/// one that a side's model lacks reads as nil there. Values are equal when they are the same
/// value of the same kind (doubles by their bits, so `-0.0` differs from `0.0` and NaN equals
/// NaN, as the files of the two mounts would show); to-one relationships by destination; to-many
/// ones as sets, and ordered ones also by order.
///
/// Threading: use from one thread; the stores are read through their thread-safe coordinators.
public struct StoreComparison {
    public let old: PersistentStoreCoordinator
    public let new: PersistentStoreCoordinator
    public let pageSize: Int

    public init(old: PersistentStoreCoordinator, new: PersistentStoreCoordinator, pageSize: Int? = nil) {
        self.old = old
        self.new = new
        self.pageSize = max(1, pageSize ?? old.configuration.batchSize)
    }

    /// The entities compared, by name: the first store's model's, then those only the second has.
    public var entityNames: [String] {
        var names = old.model.entities.map(\.name)
        let known = Set(names)
        names += new.model.entities.map(\.name).filter { !known.contains($0) }
        return names
    }

    /// Calls `report` with each difference, entity by entity (in ``entityNames`` order), by key
    /// within an entity; returns how many there were.
    ///
    /// - Throws: what reading either store throws, and what `report` throws.
    @discardableResult
    public func compare(_ report: (ObjectDifference) throws -> Void) throws -> Int {
        var count = 0
        for name in entityNames {
            var oldSide = Side(coordinator: old, entityName: name, pageSize: pageSize)
            var newSide = Side(coordinator: new, entityName: name, pageSize: pageSize)
            while true {
                let a = try oldSide.peek()
                let b = try newSide.peek()
                guard a != nil || b != nil else { break }
                if let a, b == nil || a.objectID.key < b!.objectID.key {
                    try report(
                        ObjectDifference(kind: .deleted, object: ObjectReference(entityName: name, key: a.objectID.key))
                    )
                    count += 1
                    oldSide.advance()
                } else if let b, a == nil || b.objectID.key < a!.objectID.key {
                    try report(
                        ObjectDifference(
                            kind: .inserted, object: ObjectReference(entityName: name, key: b.objectID.key)))
                    count += 1
                    newSide.advance()
                } else if let a, let b {
                    let properties = differences(a, b)
                    if !properties.isEmpty {
                        try report(
                            ObjectDifference(
                                kind: .updated, object: ObjectReference(entityName: name, key: a.objectID.key),
                                properties: properties))
                        count += 1
                    }
                    oldSide.advance()
                    newSide.advance()
                }
            }
        }
        return count
    }

    /// One store's objects of one entity, a page at a time, read ahead (``ObjectRecordReadAhead``)
    /// while the comparison runs: the two stores and the comparison then use both cores.
    private struct Side {
        var pages: ObjectRecordReadAhead?
        var page: [ObjectRecord] = []
        var index = 0
        var finished = false

        init(coordinator: PersistentStoreCoordinator, entityName: String, pageSize: Int) {
            if let entity = coordinator.model.entityID(named: entityName) {
                pages = ObjectRecordReadAhead(
                    ObjectRecordPages(
                        coordinator: coordinator, entity: entity, includingSubentities: false, pageSize: pageSize))
            } else {
                finished = true
            }
        }

        mutating func peek() throws(ObjectGraphError) -> ObjectRecord? {
            while index >= page.count {
                guard !finished, let reader = pages else { return nil }
                let next = try reader.next()
                guard let next else {
                    finished = true
                    return nil
                }
                page = next
                index = 0
            }
            return page[index]
        }

        mutating func advance() { index += 1 }
    }

    // MARK: - Properties

    private func differences(_ a: ObjectRecord, _ b: ObjectRecord) -> [ObjectDifference.Property] {
        let oldEntity = old.model[a.objectID.entity]
        let newEntity = new.model[b.objectID.entity]
        var result: [ObjectDifference.Property] = []
        for name in Self.union(oldEntity.persistentAttributes.map(\.name), newEntity.persistentAttributes.map(\.name)) {
            let x = a.attributes[name]
            let y = b.attributes[name]
            if !Self.same(x, y) {
                let type = (newEntity.attribute(named: name) ?? oldEntity.attribute(named: name))?.type ?? .undefined
                result.append(.attribute(name: name, type: type, old: x, new: y))
            }
        }
        let oldRelationships = oldEntity.persistentRelationships
        let newRelationships = newEntity.persistentRelationships
        for name in Self.union(oldRelationships.map(\.name), newRelationships.map(\.name)) {
            let oldOne = oldEntity.relationship(named: name)
            let newOne = newEntity.relationship(named: name)
            if oldOne?.isToMany == true || newOne?.isToMany == true {
                let x = (a.toMany[name] ?? []).map { reference($0, in: old.model) }
                let y = (b.toMany[name] ?? []).map { reference($0, in: new.model) }
                let ordered = oldOne?.isOrdered == true || newOne?.isOrdered == true
                let xs = Set(x)
                let ys = Set(y)
                if xs != ys || (ordered && x != y) {
                    result.append(
                        .toMany(
                            name: name, removed: x.filter { !ys.contains($0) }.sorted(),
                            added: y.filter { !xs.contains($0) }.sorted(),
                            old: ordered ? x : [], new: ordered ? y : []))
                }
            } else {
                let x = a.toOne[name].map { reference($0, in: old.model) }
                let y = b.toOne[name].map { reference($0, in: new.model) }
                if x != y { result.append(.toOne(name: name, old: x, new: y)) }
            }
        }
        return result
    }

    private func reference(_ id: ObjectID, in model: ManagedObjectModel) -> ObjectReference {
        let name =
            id.entity.rawValue >= 1 && id.entity.rawValue <= model.entities.count
            ? model[id.entity].name : "\(id.entity)"
        return ObjectReference(entityName: name, key: id.key)
    }

    /// The names of `a`, then those only `b` has.
    private static func union(_ a: [String], _ b: [String]) -> [String] {
        let known = Set(a)
        return a + b.filter { !known.contains($0) }
    }

    /// Whether two values are the same value: of one kind, doubles and floats by their bits
    /// (NaN is NaN, -0.0 is not 0.0), as the comparison decides it.
    public static func same(_ a: AttributeValue?, _ b: AttributeValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.double(let x)?, .double(let y)?): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.float(let x)?, .float(let y)?): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.date(let x)?, .date(let y)?):
            let s = x.timeIntervalSinceReferenceDate
            let t = y.timeIntervalSinceReferenceDate
            return s.bitPattern == t.bitPattern || (s.isNaN && t.isNaN)
        default: return a == b
        }
    }
}
