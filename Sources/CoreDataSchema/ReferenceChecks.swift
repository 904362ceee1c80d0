import ObjectGraph

/// Where each reference of a store lives in Core Data's schema, as `storefs doctor` checks it:
/// every to-one key column, every many-to-many join table with both its ends, every hidden key
/// column of a to-many without inverse, and the Z_ENT numbers each table may hold. The statements
/// made of it are ReferenceStatements.swift's, standard SQL that both engines run.
///
/// A reference dangles when no row of its destination's table has its key *and* a Z_ENT of the
/// destination entity or one of its subentities.
///
/// Threading: a value built once per examination; share it freely.
package struct ReferenceChecks: Sendable {
    /// A to-one relationship's key column, checked once where it is declared (subentities share it).
    package struct ToOne: Sendable {
        package var entity: EntityID
        package var relationship: String
        package var table: String
        package var column: String
        package var entityColumn: String?
        /// The Z_FOK_ column that places the row in its destination's ordered to-many.
        package var orderColumn: String?
        /// Z_ENT of the entity and its subentities: the rows that have the relationship.
        package var zents: [Int64]
        package var destination: EntityID
        /// nil when the store has no table for the destination: every key dangles.
        package var destinationTable: String?
        package var destinationZents: [Int64]
    }

    /// One end of a join table.
    package struct JoinEnd: Sendable {
        /// The entity that declares the relationship seen from this end, and its name.
        package var entity: EntityID
        package var relationship: String
        /// The join table's column holding this end's keys.
        package var column: String
        package var table: String?
        package var zents: [Int64]
    }

    /// A many-to-many join table: row (source, destination) for each pair.
    package struct JoinTable: Sendable {
        package var table: String
        package var source: JoinEnd
        package var destination: JoinEnd
    }

    /// A to-many relationship without inverse: its destination rows hold the source's key.
    package struct HiddenKey: Sendable {
        package var entity: EntityID
        package var relationship: String
        /// The destination's table, its hidden key column and Z_FOK_ column.
        package var table: String
        package var column: String
        package var orderColumn: String?
        package var sourceTable: String?
        package var sourceZents: [Int64]
    }

    /// An entity tree's table and the Z_ENT numbers its rows may hold.
    package struct EntityTable: Sendable {
        package var root: EntityID
        package var table: String
        package var zents: [Int64]
    }

    package let toOne: [ToOne]
    package let joinTables: [JoinTable]
    package let hiddenKeys: [HiddenKey]
    package let entityTables: [EntityTable]

    package init(layout: StoreLayout, model: ManagedObjectModel) {
        func zents(of entity: EntityID) -> [Int64] {
            model.entityAndSubentities(of: entity).compactMap { layout[$0].zent }.sorted()
        }
        func orderColumn(table: String, column: String) -> String? {
            for entity in layout.entities {
                for case .foreignKey(let t, let c, let order?, true) in entity.toMany.values
                where t.uppercased() == table.uppercased() && c.uppercased() == column.uppercased() {
                    return order
                }
            }
            return nil
        }
        var toOne: [ToOne] = []
        var joins: [JoinTable] = []
        var hidden: [HiddenKey] = []
        var seenJoins = Set<String>()
        for entity in model.entities {
            let entityLayout = layout[entity.id]
            for relationship in entity.relationships where !relationship.isTransient {
                guard let destination = model.entityID(named: relationship.destinationEntityName) else { continue }
                let destinationTable = layout[destination].table
                if !relationship.isToMany {
                    guard let table = entityLayout.table,
                        let column = entityLayout.toOne.first(where: { $0.name == relationship.name }),
                        let key = column.column
                    else { continue }
                    toOne.append(
                        ToOne(
                            entity: entity.id, relationship: relationship.name, table: table, column: key,
                            entityColumn: column.entityColumn, orderColumn: orderColumn(table: table, column: key),
                            zents: zents(of: entity.id), destination: destination, destinationTable: destinationTable,
                            destinationZents: zents(of: destination)))
                    continue
                }
                switch entityLayout.toMany[relationship.name] {
                case .joinTable(let table, let sourceColumn, let destinationColumn, _, _, _)?:
                    guard seenJoins.insert(table.uppercased()).inserted else { continue }
                    let inverse = model.inverse(of: relationship)
                    let inverseOwner =
                        inverse.map { StoreLayout.declaringEntity(of: $0.name, from: destination, in: model) }
                        ?? destination
                    joins.append(
                        JoinTable(
                            table: table,
                            source: JoinEnd(
                                entity: entity.id, relationship: relationship.name, column: sourceColumn,
                                table: entityLayout.table, zents: zents(of: entity.id)),
                            destination: JoinEnd(
                                entity: inverseOwner, relationship: inverse?.name ?? "", column: destinationColumn,
                                table: destinationTable, zents: zents(of: inverseOwner))))
                case .foreignKey(let table, let column, let order, false)?:
                    hidden.append(
                        HiddenKey(
                            entity: entity.id, relationship: relationship.name, table: table, column: column,
                            orderColumn: order, sourceTable: entityLayout.table, sourceZents: zents(of: entity.id)))
                default:
                    continue
                }
            }
        }
        self.toOne = toOne
        self.joinTables = joins
        self.hiddenKeys = hidden
        self.entityTables = model.rootEntities.compactMap { root in
            layout[root.id].table.map { EntityTable(root: root.id, table: $0, zents: zents(of: root.id)) }
        }
    }
}
