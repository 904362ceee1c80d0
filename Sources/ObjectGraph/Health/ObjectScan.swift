import Foundation

/// One pass over every object of a store, through ``PersistentStore`` alone, a page at a time:
/// how many objects each entity has, the values that break the model, the objects whose owner is
/// gone and, for stores that cannot say so themselves (not an ``ExaminableStore``), references
/// to objects that do not exist.
///
/// Memory holds one page of rows, plus, when it looks for dangling references itself, the keys
/// of every object (what an atomic store holds in memory anyway).
///
/// Threading: a value used by one thread; the store it reads is thread-safe.
struct ObjectScan {
    let coordinator: PersistentStoreCoordinator
    let examples: Int
    /// Look for dangling references among the objects read.
    let findsDanglingReferences: Bool

    struct Result {
        var objects: [String: Int] = [:]
        var violations = ModelViolations()
        var unowned: [ReferenceGroup] = []
        var danglingToOne: [ReferenceGroup] = []
        var danglingToMany: [ReferenceGroup] = []
    }

    /// Counts and examples of one kind of finding, by (entity, property, kind).
    private struct Tally {
        var counts: [Key: (count: Int, examples: [Int64])] = [:]
        let examples: Int

        struct Key: Hashable, Comparable {
            var entity: String
            var property: String
            var kind: String
            static func < (a: Key, b: Key) -> Bool {
                (a.entity, a.property, a.kind) < (b.entity, b.property, b.kind)
            }
        }

        mutating func add(_ entity: String, _ property: String, _ kind: String = "", key: Int64) {
            let k = Key(entity: entity, property: property, kind: kind)
            var entry = counts[k] ?? (0, [])
            entry.count += 1
            if entry.examples.count < examples { entry.examples.append(key) }
            counts[k] = entry
        }

        var groups: [ReferenceGroup] {
            counts.keys.sorted().map {
                ReferenceGroup(
                    entity: $0.entity, relationship: $0.property, count: counts[$0]!.count,
                    examples: counts[$0]!.examples)
            }
        }
    }

    func run(progress: (String) -> Void = { _ in }) throws(ObjectGraphError) -> Result {
        let model = coordinator.model
        let store = coordinator.store
        var result = Result()
        var violations = Tally(examples: examples)
        var unowned = Tally(examples: examples)
        var danglingToOne = Tally(examples: examples)
        var danglingToMany = Tally(examples: examples)
        // Keys of every object: what a reference must name.
        let existing = findsDanglingReferences ? try ExistingKeys(of: store, model: model) : ExistingKeys(model: model)
        let ownership = try Ownership(coordinator: coordinator)
        for entity in model.entities {
            progress(entity.name)
            let attributes = entity.persistentAttributes.filter(Self.isConstrained)
            let toOne = entity.persistentRelationships.filter { !$0.isToMany }
            let owners = ownership.owners(of: entity.id)
            let counted = entity.persistentRelationships.filter {
                $0.isToMany && (findsDanglingReferences || $0.minCount > 0 || $0.maxCount > 0)
            }
            var objects = 0
            let walk = SnapshotWalk(coordinator: coordinator, entity: entity.id)
            try walk.forEach(unreadable: { id, error in
                objects += 1
                let (property, kind) = Self.unreadable(error, entity: entity.name)
                violations.add(entity.name, property, kind, key: id.key.rawValue)
            }) { (page) throws(ObjectGraphError) in
                objects += page.count
                for snapshot in page {
                    let key = snapshot.objectID.key.rawValue
                    for attribute in attributes {
                        if let problem = Validator.problem(of: snapshot.attributes[attribute.name], for: attribute) {
                            violations.add(entity.name, attribute.name, problem.rawValue, key: key)
                        }
                    }
                    for relationship in toOne {
                        let destination = snapshot.toOne[relationship.name]
                        if destination == nil, !relationship.isOptional {
                            violations.add(entity.name, relationship.name, "nil", key: key)
                        }
                        if findsDanglingReferences, let destination, !existing.contains(destination) {
                            danglingToOne.add(entity.name, relationship.name, key: key)
                        }
                    }
                    if ownership.isUnowned(snapshot) {
                        unowned.add(entity.name, owners.map(\.name).joined(separator: ","), key: key)
                    }
                }
                let ids = page.map(\.objectID)
                for relationship in counted {
                    let lists = try store.toManyDestinationLists(of: relationship.name, in: entity.id, for: ids)
                    for (id, list) in zip(ids, lists) {
                        if let problem = Validator.problem(count: list.count, for: relationship) {
                            violations.add(entity.name, relationship.name, problem.rawValue, key: id.key.rawValue)
                        }
                        if findsDanglingReferences {
                            for destination in list where !existing.contains(destination) {
                                danglingToMany.add(entity.name, relationship.name, key: id.key.rawValue)
                            }
                        }
                    }
                }
            }
            result.objects[entity.name] = objects
        }
        result.violations = ModelViolations(
            problems: violations.counts.keys.sorted().map { key in
                ModelViolations.Problem(
                    entity: key.entity, property: key.property, kind: key.kind,
                    count: violations.counts[key]!.count, examples: violations.counts[key]!.examples)
            })
        result.unowned = unowned.groups
        result.danglingToOne = danglingToOne.groups
        result.danglingToMany = danglingToMany.groups
        return result
    }

    /// The property and kind of a row the store could not read, from its error: the stores name
    /// the value as `ENTITY.PROPERTY of object pN` (SQLiteStore's ValueCoding); `range` when the
    /// value is outside its type (70000 in an Integer 16 column), else `unreadable`.
    static func unreadable(_ error: ObjectGraphError, entity: String) -> (property: String, kind: String) {
        let kind = error.message.contains("out of range") ? "range" : "unreadable"
        for word in error.message.split(separator: " ") where word.hasPrefix(entity + ".") {
            return (String(word.dropFirst(entity.count + 1)), kind)
        }
        return ("(row)", kind)
    }

    /// Whether any stored value of `attribute` could break its model: everything but an optional
    /// attribute of a type without width, minimum or maximum (a value of the wrong type is what a
    /// store cannot read, which reading it reports).
    private static func isConstrained(_ attribute: AttributeDescription) -> Bool {
        !attribute.isOptional || attribute.minValue != nil || attribute.maxValue != nil
            || attribute.type.integerRange != nil
    }
}

/// Values a store holds that break its model, by entity, property and kind (docs/HEALTH.md,
/// "Values that break the model").
public struct ModelViolations: Sendable {
    public struct Problem: Sendable, Hashable {
        public var entity: String
        public var property: String
        /// `nil` (a non-optional property without value), `range` (a number outside its type's
        /// width or the model's minimum and maximum; a string's or data's length outside them),
        /// `type`, `count` (a to-many relationship's count outside its minimum and maximum).
        public var kind: String
        public var count: Int
        public var examples: [Int64]
    }

    public var problems: [Problem] = []

    public var total: Int { problems.reduce(0) { $0 + $1.count } }
}
