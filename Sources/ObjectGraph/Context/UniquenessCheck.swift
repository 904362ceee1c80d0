import Foundation

/// Uniqueness at the call: a change that would give an object the same values of a unique key as
/// another object of its entity tree is refused when it is made, as a value that does not fit its
/// attribute is, instead of failing the commit it joins (SQLite refuses the whole transaction
/// when a UNIQUE index is broken, and Core Data's own save refuses a uniqueness constraint).
///
/// The keys are the model's uniqueness constraints (Core Data's `uniquenessConstraints`,
/// SwiftData's `#Unique` and `@Attribute(.unique)`; a composite named in one stands for its
/// elements), the entity's and its ancestors', and the store's own unique indexes
/// (``PersistentStore/uniqueKeys(of:)``: Photos has one Core Data's model does not declare). As
/// SQL's UNIQUE does, a key with a nil part conflicts with nothing.
///
/// Finding the other objects: the store looks the values up in one request where it can (an
/// SQLite store in SQL on the columns, so on the UNIQUE index), else answers a predicate of
/// equalities; otherwise, and for values a predicate cannot spell (UUIDs, binary data,
/// decimals), the tree's objects are read in batches. The context's pending
/// changes are then applied: a candidate counts only if it still has the values, and pending
/// objects of the tree are compared too.
extension ObjectContext {
    /// One part of a key: an attribute's value or a to-one's destination.
    typealias KeyPart = PropertyMatch

    /// The unique keys (property names) of `entity`'s objects.
    public func uniqueKeys(of entity: EntityID) -> [[String]] {
        var keys: [[String]] = []
        var current: EntityID? = entity
        while let id = current {
            let description = model[id]
            for constraint in description.uniquenessConstraints where !constraint.isEmpty {
                var names: [String] = []
                for name in constraint {
                    if description.composite(named: name) != nil {
                        names += description.allAttributes.filter { $0.name.hasPrefix(name + ".") }.map(\.name)
                    } else {
                        names.append(name)
                    }
                }
                keys.append(names)
            }
            current = description.parentID
        }
        let own = model[entity]
        for key in store.uniqueKeys(of: own.rootID)
        where key.allSatisfy({ own.attribute(named: $0) != nil || own.relationship(named: $0) != nil }) {
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }

    /// Throws ``ObjectGraphError/Code/exists`` when giving `id` `newPart` for property `name` would
    /// duplicate a unique key of another object.
    func checkUniqueness(of id: ObjectID, setting name: String, to newPart: KeyPart?) throws(ObjectGraphError) {
        let keys = uniqueKeys(of: id.entity).filter { $0.contains(name) }
        guard !keys.isEmpty, let current = try snapshot(of: id) else { return }
        for key in keys {
            var parts: [KeyPart] = []
            for property in key {
                let part = property == name ? newPart : Self.part(property, of: current)
                guard let part else { break }
                parts.append(part)
            }
            guard parts.count == key.count else { continue }
            if let other = try holder(of: key, parts, besides: id) {
                let entity = model[id.entity]
                let values = zip(key, parts).map { "\($0) \(Self.describe($1))" }.joined(separator: ", ")
                throw ObjectGraphError(
                    .exists,
                    "\(entity.name)/\(id.key) would have the same \(values) as \(model[other.entity].name)/\(other.key): "
                        + "the uniqueness constraint on \(key.joined(separator: ", ")) of \(entity.name) refuses it",
                    objects: [id])
            }
        }
    }

    private static func part(_ property: String, of snapshot: Snapshot) -> KeyPart? {
        if let value = snapshot.attributes[property] { return .value(value) }
        if let destination = snapshot.toOne[property] { return .object(destination) }
        return nil
    }

    private static func describe(_ part: KeyPart) -> String {
        switch part {
        case .value(.string(let s)): "\"\(s)\""
        case .value(.integer(let i)): "\(i)"
        case .value(.double(let d)): "\(d)"
        case .value(.boolean(let b)): b ? "true" : "false"
        case .value(.uuid(let u)): u.uuidString.lowercased()
        case .value(let value): "\(value)"
        case .object(let id): "p\(id.key.rawValue)"
        }
    }

    /// Another object of `id`'s tree holding `parts` for `key`, as this context sees it: the
    /// pending objects are compared from memory (one pass, under the lock once), the store's
    /// candidates by their current snapshots (a pending change of theirs counts, a delete hides
    /// them).
    private func holder(of key: [String], _ parts: [KeyPart], besides id: ObjectID) throws(ObjectGraphError)
        -> ObjectID?
    {
        let root = model[id.entity].rootID
        func holds(_ snapshot: Snapshot) -> Bool {
            zip(key, parts).allSatisfy { Self.part($0, of: snapshot) == $1 }
        }
        let (pending, pendingHolder): (Set<ObjectID>, ObjectID?) = state.withLock { state in
            var ids: Set<ObjectID> = []
            var found: ObjectID?
            for (other, change) in state.pending where model[other.entity].rootID == root {
                ids.insert(other)
                if found == nil, other != id, holds(change.snapshot) { found = other }
            }
            return (ids, found)
        }
        if let pendingHolder { return pendingHolder }
        var candidates: [ObjectID]
        if let found = try store.objectIDs(holding: Array(zip(key, parts)).map { ($0, $1) }, in: root) {
            candidates = found
        } else if let predicate = Self.predicate(key, parts),
            let found = try store.objectIDs(matching: predicate, of: root, includingSubentities: true)
        {
            candidates = found
        } else {
            candidates = try objectIDs(of: root, includingSubentities: true)
        }
        candidates.removeAll { $0 == id || pending.contains($0) }
        for other in candidates {
            guard let snapshot = try snapshot(of: other) else { continue }
            if holds(snapshot) { return other }
        }
        return nil
    }

    /// `key == parts` as a predicate a store can answer; nil when a part has no literal.
    private static func predicate(_ key: [String], _ parts: [KeyPart]) -> Predicate? {
        var operands: [Predicate] = []
        for (property, part) in zip(key, parts) {
            let literal: Expression.Literal
            switch part {
            case .object(let id): literal = .object(id)
            case .value(.string(let s)): literal = .string(s)
            case .value(.integer(let i)): literal = .integer(i)
            case .value(.boolean(let b)): literal = .boolean(b)
            case .value(.double(let d)): literal = .double(d)
            case .value(.date(let d)): literal = .date(d.timeIntervalSinceReferenceDate)
            default: return nil
            }
            operands.append(
                .comparison(
                    lhs: .keyPath(property.split(separator: ".").map(String.init)), op: .equal, rhs: .constant(literal))
            )
        }
        return .and(operands)
    }
}
