import Foundation
import ObjectGraph

/// Which properties a change of Core Data's persistent history marks: the property slots of each
/// entity in the order Core Data numbers them (the bits of `ACHANGE.ZCOLUMNS`), and the
/// attributes a delete keeps in its tombstone. Dialect-free: the SQLite store continues an app's
/// history with it (PersistentHistory.swift), the PostgreSQL store writes its own.
///
/// The order was read off the real rows of the corpus stores (docs/SEMANTICS.md has the evidence).
///
/// Threading: a value built once per store; share it freely.
package struct HistorySlots: Sendable {
    /// Per entity (index = EntityID - 1): the slot names of ``slots(of:in:)``.
    let slots: [[String]]
    /// Per entity: the attributes whose values a delete keeps, in tombstone order.
    let preserved: [[String]]
    private let toOneSlots: [[String: [String]]]

    package init(model: ManagedObjectModel) {
        var slots: [[String]] = []
        var preserved: [[String]] = []
        var toOneSlots: [[String: [String]]] = []
        for entity in model.entities {
            let (list, extra) = Self.slots(of: entity.id, in: model)
            slots.append(list)
            toOneSlots.append(extra)
            let byName = Dictionary(entity.allAttributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            preserved.append(list.filter { byName[$0]?.preservesValueInHistoryOnDeletion == true })
        }
        self.slots = slots
        self.preserved = preserved
        self.toOneSlots = toOneSlots
    }

    // MARK: - Slots

    /// The properties an update's `ZCOLUMNS` bits stand for, in bit order: to-one relationships,
    /// then one `NAME#entity` slot per to-one whose destination has subentities (its `Z<n>_`
    /// column), one `NAME#order` slot per to-one whose inverse is ordered (its `Z_FOK_` column),
    /// then non-transient attributes, then to-many relationships. Within each group the
    /// properties the root entity declares come first, then each subentity level's down to this
    /// entity, and within a level by name (code point order). Also returns, per to-one, the
    /// slots a change of it marks.
    package static func slots(of id: EntityID, in model: ManagedObjectModel) -> ([String], [String: [String]]) {
        var chain: [EntityDescription] = []
        var current: EntityID? = id
        while let e = current, chain.count <= model.entities.count {
            chain.insert(model[e], at: 0)
            current = model[e].parentID
        }
        var level: [String: Int] = [:]
        var attributes: [AttributeDescription] = []
        var relationships: [RelationshipDescription] = []
        for (depth, entity) in chain.enumerated() {
            for attribute in entity.attributes where level[attribute.name] == nil {
                level[attribute.name] = depth
                attributes.append(attribute)
            }
            for relationship in entity.relationships where level[relationship.name] == nil {
                level[relationship.name] = depth
                relationships.append(relationship)
            }
        }
        func order(_ a: String, _ b: String) -> Bool {
            let (la, lb) = (level[a] ?? 0, level[b] ?? 0)
            return la != lb ? la < lb : a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        }
        let toOne = relationships.filter { !$0.isTransient && !$0.isToMany }.sorted { order($0.name, $1.name) }
        let toMany = relationships.filter { !$0.isTransient && $0.isToMany }.map(\.name).sorted(by: order)
        var extra: [String: [String]] = [:]
        var entitySlots: [String] = []
        var orderSlots: [String] = []
        for relationship in toOne {
            var marks = [relationship.name]
            if let destination = model.entityID(named: relationship.destinationEntityName),
                !model[destination].subentityIDs.isEmpty
            {
                entitySlots.append(relationship.name + "#entity")
                marks.append(relationship.name + "#entity")
            }
            if let inverse = model.inverse(of: relationship), inverse.isToMany, inverse.isOrdered {
                orderSlots.append(relationship.name + "#order")
                marks.append(relationship.name + "#order")
            }
            extra[relationship.name] = marks
        }
        let plain = attributes.filter { !$0.isTransient }.map(\.name).sorted(by: order)
        return (toOne.map(\.name) + entitySlots + orderSlots + plain + toMany, extra)
    }

    package func slots(of entity: EntityID) -> [String] {
        entity.rawValue >= 1 && entity.rawValue <= slots.count ? slots[entity.rawValue - 1] : []
    }

    /// `ZCOLUMNS` for an update of `names` of an object of `entity`: a changed to-one marks its
    /// entity and order slots too (Core Data's rows mark both together).
    package func columnMask(for names: Set<String>, of entity: EntityID) -> Data {
        let list = slots(of: entity)
        var marked: Set<String> = []
        let extra = entity.rawValue >= 1 && entity.rawValue <= toOneSlots.count ? toOneSlots[entity.rawValue - 1] : [:]
        for name in names { marked.formUnion(extra[name] ?? [name]) }
        var bytes = [UInt8](repeating: 0, count: (list.count + 7) / 8)
        for (i, slot) in list.enumerated() where marked.contains(slot) {
            bytes[i / 8] |= 0x80 >> UInt8(i % 8)
        }
        return Data(bytes)
    }

    /// The slot names a `ZCOLUMNS` value marks; nil when its length or bits do not fit the
    /// entity's slots (another model than the one the store was written with).
    package func decode(mask: Data, of entity: EntityID) -> [String]? {
        let list = slots(of: entity)
        guard mask.count == (list.count + 7) / 8 else { return nil }
        var names: [String] = []
        for (byteIndex, byte) in mask.enumerated() {
            for bit in 0..<8 where byte & (0x80 >> UInt8(bit)) != 0 {
                let slot = byteIndex * 8 + bit
                guard slot < list.count else { return nil }
                names.append(list[slot])
            }
        }
        return names
    }

    /// The attributes of `entity` a delete records, in tombstone order.
    package func preservedAttributes(of entity: EntityID) -> [String] {
        entity.rawValue >= 1 && entity.rawValue <= preserved.count ? preserved[entity.rawValue - 1] : []
    }

    /// The most attributes any entity's delete keeps: how many tombstone columns a store needs.
    package var maximumPreservedCount: Int { preserved.map(\.count).max() ?? 0 }
}
