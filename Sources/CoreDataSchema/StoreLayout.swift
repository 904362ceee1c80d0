import Logging
import ObjectGraph

/// Where each entity, attribute and relationship of a model lives in Core Data's schema: the
/// table, the columns and the Z_ENT numbers. Dialect-free: the SQLite store reconciles it with a
/// file, the PostgreSQL store makes its tables from the plan.
///
/// Built once per open, either as the plan for a new file (`schema == nil`: names follow Core
/// Data's rules, Z_ENT = EntityID) or reconciled against an existing file, where the actual
/// tables and columns win over the formula: entities are matched to Z_PRIMARYKEY rows by name,
/// then by renaming identifier, then by place in the hierarchy; columns by name, then among the
/// suffixed variants (`ZNAME1`) by declared type; join tables are discovered among the tables.
package struct StoreLayout: Sendable {
    package struct AttributeColumn: Sendable {
        package var attribute: AttributeDescription
        /// nil when the file has no column for the attribute: it reads as nil.
        package var column: String?
    }

    package struct ToOneColumn: Sendable {
        package var name: String
        package var column: String?
        /// `Z<n>_<REL>`: the destination's actual Z_ENT, when the declared destination has subentities.
        package var entityColumn: String?
        package var destination: EntityID
    }

    package enum ToMany: Sendable {
        /// The destination rows hold the source's key in `column` (inverse to-one, or the hidden
        /// column of a to-many without inverse); `orderColumn` is Z_FOK_ for ordered ones.
        case foreignKey(table: String, column: String, orderColumn: String?, isInverseToOne: Bool)
        /// A many-to-many join table.
        case joinTable(
            table: String, sourceColumn: String, destinationColumn: String, orderColumn: String?,
            destinationTable: String, ownsOrder: Bool)
        /// The file has nowhere to keep it: reads as empty.
        case missing
    }

    package struct EntityLayout: Sendable {
        package var id: EntityID
        package var name: String
        package var zent: Int64?
        package var rootID: EntityID
        /// The root entity's table; nil when the file has none.
        package var table: String?
        package var attributes: [AttributeColumn] = []
        package var toOne: [ToOneColumn] = []
        package var toMany: [String: ToMany] = [:]
        /// What a row of the entity is read onto; set once the columns are known.
        package var snapshotNames = SnapshotNames()
    }

    /// The names a snapshot of an entity is read onto, shared by every row read of it: its
    /// attributes and to-ones that have a column, and each one's slot, in the order of
    /// ``EntityLayout/attributes`` and ``EntityLayout/toOne`` with columnless ones left out.
    package struct SnapshotNames: Sendable {
        package var attributes = PropertyNames.none
        package var attributeSlots: [Int] = []
        package var toOne = PropertyNames.none
        package var toOneSlots: [Int] = []

        package init() {}

        package init(_ entity: EntityLayout) {
            (attributes, attributeSlots) = PropertyNames.slotted(
                entity.attributes.filter { $0.column != nil }.map(\.attribute.name))
            (toOne, toOneSlots) = PropertyNames.slotted(entity.toOne.filter { $0.column != nil }.map(\.name))
        }
    }

    /// A table a new file needs, in creation order.
    package struct PlannedTable: Sendable {
        package var name: String
        package var columns: [(name: String, type: String)]
        package var primaryKey: [String]
        package var indexes: [(name: String, columns: [String])]
        /// UNIQUE indexes: Core Data's for the entities' uniqueness constraints
        /// (`Z_<Entity>_UNIQUE_<names>`), which SwiftData's `#Unique` and `.unique` are.
        package var uniqueIndexes: [(name: String, columns: [String])] = []
    }

    package let entities: [EntityLayout]
    package let entityByZent: [Int64: EntityID]
    /// Join tables and the entity trees on each side, for deleting an object's pairs.
    package let joinTables: [(table: String, column: String, root: EntityID)]
    /// Hidden key columns of to-many relationships without inverse (`Z<n><REL>` in the destination
    /// table, with their `Z_FOK_` column) and the tree of the source whose key they hold, for
    /// clearing them when the source is deleted.
    package let hiddenKeyColumns: [(table: String, column: String, orderColumn: String?, root: EntityID)]
    /// Tables for a new file (empty when reading an existing one).
    package let plannedTables: [PlannedTable]
    /// The file's UNIQUE indexes on entity tables, as the property names whose columns they cover
    /// (attributes and to-ones of the tree's entities), by root entity: what a change must not
    /// duplicate. Indexes on columns no property maps to are left out.
    package let uniqueKeys: [EntityID: [[String]]]

    package subscript(id: EntityID) -> EntityLayout { entities[id.rawValue - 1] }

    package static func sqlType(of type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float: "FLOAT"
        case .decimal: "DECIMAL"
        case .date: "TIMESTAMP"
        case .string, .uri: "VARCHAR"
        case .binaryData, .transformable, .uuid, .objectID, .undefined: "BLOB"
        }
    }

    package static func tableName(forRoot name: String) -> String { "Z" + name.uppercased() }

    /// The column Core Data names for an attribute before any suffix: `Z` and the name in capitals;
    /// for a composite's element, its own name (`author.person` → ZPERSON), so two elements or an
    /// element and an attribute of one name share the base and the later one (in the entity's
    /// attribute order, which places a composite by its name) takes the suffix: the MetaCocktails
    /// store has `author.id` in ZID and the entity's own `id` in ZID1.
    package static func columnBase(of attribute: AttributeDescription) -> String {
        "Z" + attribute.elementName.uppercased()
    }

    // MARK: - Building

    package init(model: ManagedObjectModel, schema: FileSchema?, logger: Logger) {
        // 1. Z_ENT numbers.
        var zents: [EntityID: Int64] = [:]
        if let schema {
            zents = Self.matchEntities(model: model, rows: schema.entityRows, logger: logger)
        } else {
            for entity in model.entities { zents[entity.id] = Int64(entity.id.rawValue) }
        }
        func zent(_ id: EntityID) -> Int64 { zents[id] ?? Int64(id.rawValue) }
        func rowName(_ id: EntityID) -> String? {
            guard let z = zents[id] else { return nil }
            return schema?.entityRows.first { $0.zent == z }?.name
        }

        // 2. Tables of root entities.
        var tables: [EntityID: String] = [:]
        for root in model.rootEntities {
            let planned = Self.tableName(forRoot: root.name)
            if let schema {
                if let found = schema.table(named: planned) {
                    tables[root.id] = found.name
                } else if let old = rowName(root.id), let found = schema.table(named: Self.tableName(forRoot: old)) {
                    tables[root.id] = found.name
                } else {
                    logger.warning("store has no table \(planned) for entity \(root.name); it reads as empty")
                }
            } else {
                tables[root.id] = planned
            }
        }

        var layouts = model.entities.map {
            EntityLayout(id: $0.id, name: $0.name, zent: zents[$0.id], rootID: $0.rootID, table: tables[$0.rootID])
        }
        // Columns taken so far per table (upper-cased), and the columns a new file gets.
        var taken: [String: Set<String>] = [:]
        var plannedColumns: [String: [(name: String, type: String)]] = [:]
        var plannedIndexes: [String: [(name: String, columns: [String])]] = [:]

        /// Allocates a column: Core Data's name with a numeric suffix on collision; on an existing
        /// file, the actual column among the candidates whose declared type fits.
        func allocate(_ base: String, type: String, in table: String) -> String? {
            let key = table.uppercased()
            var used = taken[key, default: []]
            defer { taken[key] = used }
            if let schema {
                let columns = schema.columns(of: table)
                let candidates = columns.filter { column in
                    let upper = column.name.uppercased()
                    guard upper.hasPrefix(base), !used.contains(upper) else { return false }
                    let suffix = upper.dropFirst(base.count)
                    return suffix.isEmpty || suffix.allSatisfy(\.isNumber)
                }
                let pick =
                    candidates.first { $0.name.uppercased() == base && $0.type == type }
                    ?? candidates.first { $0.type == type } ?? candidates.first { $0.name.uppercased() == base }
                guard let pick else { return nil }
                used.insert(pick.name.uppercased())
                return pick.name
            }
            var name = base
            var n = 1
            while used.contains(name) {
                name = base + String(n)
                n += 1
            }
            used.insert(name)
            plannedColumns[key, default: []].append((name, type))
            return name
        }
        func existing(_ name: String, in table: String) -> String? {
            guard let schema else { return nil }
            return schema.columns(of: table).first { $0.name.uppercased() == name.uppercased() }?.name
        }
        func plan(_ name: String, type: String, in table: String, index: Bool = false) -> String {
            let key = table.uppercased()
            if !(taken[key]?.contains(name) ?? false) {
                taken[key, default: []].insert(name)
                plannedColumns[key, default: []].append((name, type))
                if index { plannedIndexes[key, default: []].append(("\(table)_\(name)_INDEX", [name])) }
            }
            return name
        }

        // 3. Attribute and to-one columns, declared ones per entity, inherited ones copied.
        for entity in model.entities {
            var layout = layouts[entity.id.rawValue - 1]
            if let parent = entity.parentID {
                layout.attributes = layouts[parent.rawValue - 1].attributes
                layout.toOne = layouts[parent.rawValue - 1].toOne
            }
            for attribute in entity.attributes where !attribute.isTransient {
                let column = layout.table.flatMap {
                    allocate(Self.columnBase(of: attribute), type: Self.sqlType(of: attribute.type), in: $0)
                }
                if column == nil, schema != nil {
                    logger.warning("store has no column for \(entity.name).\(attribute.name); it reads as nil")
                }
                layout.attributes.append(AttributeColumn(attribute: attribute, column: column))
            }
            for relationship in entity.relationships where !relationship.isTransient && !relationship.isToMany {
                guard let destination = model.entityID(named: relationship.destinationEntityName) else { continue }
                var column: String?
                if let table = layout.table {
                    column = allocate("Z" + relationship.name.uppercased(), type: "INTEGER", in: table)
                    if let column, schema == nil {
                        plannedIndexes[table.uppercased(), default: []].append(("\(table)_\(column)_INDEX", [column]))
                    }
                }
                layouts[entity.id.rawValue - 1] = layout
                layout.toOne.append(
                    ToOneColumn(name: relationship.name, column: column, entityColumn: nil, destination: destination))
            }
            layouts[entity.id.rawValue - 1] = layout
        }
        // 4. Columns that depend on other entities: Z<n>_<REL>, Z_FOK_<REL>, hidden to-many keys.
        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isTransient && !relationship.isToMany {
                guard let table = layouts[entity.id.rawValue - 1].table,
                    let destination = model.entityID(named: relationship.destinationEntityName),
                    let column = layouts[entity.id.rawValue - 1].toOne.first(where: { $0.name == relationship.name })?
                        .column
                else { continue }
                let suffix = String(column.dropFirst())
                var entityColumn: String?
                let entName = "Z\(zent(destination))_\(suffix)"
                if schema != nil {
                    entityColumn =
                        existing(entName, in: table)
                        ?? schema!.columns(of: table).first { Self.isEntityColumn($0.name, for: suffix) }?.name
                } else if !model[destination].subentityIDs.isEmpty {
                    entityColumn = plan(entName, type: "INTEGER", in: table)
                }
                if let entityColumn {
                    for id in model.entityAndSubentities(of: entity.id) {
                        if let i = layouts[id.rawValue - 1].toOne.firstIndex(where: { $0.name == relationship.name }) {
                            layouts[id.rawValue - 1].toOne[i].entityColumn = entityColumn
                        }
                    }
                }
                if let inverse = model.inverse(of: relationship), inverse.isToMany, inverse.isOrdered, schema == nil {
                    _ = plan("Z_FOK_" + suffix, type: "INTEGER", in: table)
                }
            }
        }

        // 5. To-many relationships.
        var joinTables: [(table: String, column: String, root: EntityID)] = []
        var plannedJoins: [PlannedTable] = []
        for entity in model.entities {
            for relationship in entity.relationships where !relationship.isTransient && relationship.isToMany {
                guard let destination = model.entityID(named: relationship.destinationEntityName) else { continue }
                let mapping: ToMany
                let destinationTable = layouts[destination.rawValue - 1].table
                if let inverse = model.inverse(of: relationship), !inverse.isToMany {
                    let destinationLayout = layouts[destination.rawValue - 1]
                    if let destinationTable,
                        let column = destinationLayout.toOne.first(where: { $0.name == inverse.name })?.column
                    {
                        let fok = "Z_FOK_" + column.dropFirst()
                        let orderColumn =
                            schema == nil
                            ? (relationship.isOrdered ? fok : nil)
                            : (relationship.isOrdered ? existing(fok, in: destinationTable) : nil)
                        mapping = .foreignKey(
                            table: destinationTable, column: column, orderColumn: orderColumn, isInverseToOne: true)
                    } else {
                        mapping = .missing
                    }
                } else if let inverse = model.inverse(of: relationship) {
                    // Many-to-many. A is the side with the lower Z_ENT (by name when both are one entity).
                    let inverseOwner = Self.declaringEntity(of: inverse.name, from: destination, in: model)
                    let selfIsA =
                        (zent(entity.id), relationship.name) <= (zent(inverseOwner), inverse.name)
                    let (aEntity, aRel, bEntity, bRel) =
                        selfIsA
                        ? (entity.id, relationship, inverseOwner, inverse)
                        : (inverseOwner, inverse, entity.id, relationship)
                    let reflexive = aEntity == bEntity && aRel.name == bRel.name
                    let plannedTable = "Z_\(zent(aEntity))\(aRel.name.uppercased())"
                    var aColumn = "Z_\(zent(aEntity))\(bRel.name.uppercased())"
                    var bColumn = reflexive ? "REFLEXIVE" : "Z_\(zent(bEntity))\(aRel.name.uppercased())"
                    if aColumn == bColumn { bColumn += "1" }
                    var table: String? = plannedTable
                    if let schema {
                        table = Self.discoverJoinTable(
                            schema: schema,
                            candidates: [
                                plannedTable, "Z_\(zent(bEntity))\(bRel.name.uppercased())"
                            ], aColumn: &aColumn, bColumn: &bColumn, aZent: zent(aEntity), bZent: zent(bEntity),
                            aRelName: aRel.name.uppercased(), bRelName: bRel.name.uppercased())
                    } else if selfIsA {
                        let aFok = bRel.isOrdered ? "Z_FOK_" + aColumn.dropFirst(2) : nil
                        let bFok = aRel.isOrdered ? "Z_FOK_" + bColumn.dropFirst(2) : nil
                        var columns = [(aColumn, "INTEGER"), (bColumn, "INTEGER")]
                        if let aFok, !reflexive { columns.append((aFok, "INTEGER")) }
                        if let bFok { columns.append((bFok, "INTEGER")) }
                        plannedJoins.append(
                            PlannedTable(
                                name: plannedTable, columns: columns, primaryKey: [aColumn, bColumn],
                                indexes: [("\(plannedTable)_\(bColumn)_INDEX", [bColumn, aColumn])]))
                    }
                    if let table, let destinationTable {
                        let (source, dest) =
                            entity.id == aEntity && relationship.name == aRel.name
                            ? (aColumn, bColumn) : (bColumn, aColumn)
                        let fok = "Z_FOK_" + dest.dropFirst(2)
                        let orderColumn: String? =
                            relationship.isOrdered
                            ? (schema == nil ? fok : existing(fok, in: table)) : nil
                        mapping = .joinTable(
                            table: table, sourceColumn: source, destinationColumn: dest, orderColumn: orderColumn,
                            destinationTable: destinationTable, ownsOrder: true)
                        joinTables.append((table, source, entity.rootID))
                    } else {
                        logger.warning(
                            "store has no join table for \(entity.name).\(relationship.name); it reads as empty")
                        mapping = .missing
                    }
                } else {
                    // No inverse: Core Data keeps a hidden key column Z<sourceZ_ENT><REL> in the destination table.
                    let hidden = "Z\(zent(entity.id))\(relationship.name.uppercased())"
                    if let destinationTable {
                        if schema == nil {
                            let column = plan(hidden, type: "INTEGER", in: destinationTable, index: true)
                            let fok =
                                relationship.isOrdered
                                ? plan("Z_FOK_" + hidden.dropFirst(), type: "INTEGER", in: destinationTable) : nil
                            mapping = .foreignKey(
                                table: destinationTable, column: column, orderColumn: fok, isInverseToOne: false)
                        } else if let column = existing(hidden, in: destinationTable) {
                            let fok =
                                relationship.isOrdered
                                ? existing("Z_FOK_" + hidden.dropFirst(), in: destinationTable) : nil
                            mapping = .foreignKey(
                                table: destinationTable, column: column, orderColumn: fok, isInverseToOne: false)
                        } else {
                            logger.warning(
                                "\(entity.name).\(relationship.name) has no inverse and the store has no column \(hidden) for it; it reads as empty"
                            )
                            mapping = .missing
                        }
                    } else {
                        mapping = .missing
                    }
                }
                for id in model.entityAndSubentities(of: entity.id) {
                    layouts[id.rawValue - 1].toMany[relationship.name] = mapping
                }
            }
        }
        // Deduplicate join-table entries (both sides of a pair add theirs).
        var seen = Set<String>()
        self.joinTables = joinTables.filter { seen.insert($0.table + "." + $0.column).inserted }
        var hidden: [(table: String, column: String, orderColumn: String?, root: EntityID)] = []
        var seenHidden = Set<String>()
        for entity in model.entities {
            for case .foreignKey(let table, let column, let orderColumn, false)? in layouts[entity.id.rawValue - 1]
                .toMany.values
            where seenHidden.insert(table + "." + column).inserted {
                hidden.append((table, column, orderColumn, entity.rootID))
            }
        }
        self.hiddenKeyColumns = hidden

        for i in layouts.indices { layouts[i].snapshotNames = SnapshotNames(layouts[i]) }
        self.entities = layouts
        var byZent: [Int64: EntityID] = [:]
        for layout in layouts { if let z = layout.zent { byZent[z] = layout.id } }
        self.entityByZent = byZent

        var planned: [PlannedTable] = []
        if schema == nil {
            for root in model.rootEntities {
                guard let table = tables[root.id] else { continue }
                var indexes = plannedIndexes[table.uppercased()] ?? []
                if !root.subentityIDs.isEmpty { indexes.append(("\(table)_Z_ENT_INDEX", ["Z_ENT"])) }
                var uniqueIndexes: [(name: String, columns: [String])] = []
                // Fetch indexes (`#Index`) and uniqueness constraints (`#Unique`), as Core Data
                // names them: Z_<Entity>_<index name>, Z_<Entity>_UNIQUE_<property names>.
                for id in model.entityAndSubentities(of: root.id) {
                    let entity = model[id]
                    func columns(_ names: [String]) -> [String]? {
                        var result: [String] = []
                        for name in names {
                            let leaves = entity.allAttributes.filter {
                                $0.name == name || $0.name.hasPrefix(name + ".")
                            }
                            let found =
                                leaves.compactMap { leaf in
                                    layouts[id.rawValue - 1].attributes.first { $0.attribute.name == leaf.name }?.column
                                } + layouts[id.rawValue - 1].toOne.filter { $0.name == name }.compactMap(\.column)
                            guard !found.isEmpty else { return nil }
                            result += found
                        }
                        return result.isEmpty ? nil : result
                    }
                    for index in entity.fetchIndexes {
                        guard let covered = columns(index.elements.map(\.property)) else { continue }
                        indexes.append(("Z_\(entity.name)_\(index.name)", covered))
                    }
                    for constraint in entity.uniquenessConstraints {
                        guard let covered = columns(constraint) else { continue }
                        uniqueIndexes.append(("Z_\(entity.name)_UNIQUE_\(constraint.joined(separator: "_"))", covered))
                    }
                }
                var plannedTable = PlannedTable(
                    name: table,
                    columns: [("Z_PK", "INTEGER PRIMARY KEY"), ("Z_ENT", "INTEGER"), ("Z_OPT", "INTEGER")]
                        + Self.coreDataColumnOrder(plannedColumns[table.uppercased()] ?? []),
                    primaryKey: [], indexes: indexes)
                plannedTable.uniqueIndexes = uniqueIndexes
                planned.append(plannedTable)
            }
            planned += plannedJoins
        }
        self.plannedTables = planned

        var unique: [EntityID: [[String]]] = [:]
        if let schema {
            for name in schema.uniqueIndexes.sorted() {
                guard let index = schema.indexes[name] else { continue }
                guard
                    let root = model.rootEntities.first(where: {
                        tables[$0.id]?.uppercased() == index.table.uppercased()
                    })
                else { continue }
                var columnNames: [String: String] = [:]
                for id in model.entityAndSubentities(of: root.id) {
                    for attribute in layouts[id.rawValue - 1].attributes {
                        if let column = attribute.column { columnNames[column.uppercased()] = attribute.attribute.name }
                    }
                    for toOne in layouts[id.rawValue - 1].toOne {
                        if let column = toOne.column { columnNames[column.uppercased()] = toOne.name }
                    }
                }
                let names = index.columns.compactMap { columnNames[$0.uppercased()] }
                guard names.count == index.columns.count else { continue }
                if !(unique[root.id]?.contains(names) ?? false) { unique[root.id, default: []].append(names) }
            }
        }
        self.uniqueKeys = unique
    }

    /// Core Data groups columns by storage class: INTEGER, then TIMESTAMP/FLOAT/DECIMAL, VARCHAR, BLOB.
    private static func coreDataColumnOrder(_ columns: [(name: String, type: String)]) -> [(name: String, type: String)]
    {
        let rank = ["INTEGER": 0, "TIMESTAMP": 1, "FLOAT": 1, "DECIMAL": 1, "VARCHAR": 2, "BLOB": 3]
        return columns.enumerated().sorted {
            (rank[$0.element.type] ?? 4, $0.offset) < (rank[$1.element.type] ?? 4, $1.offset)
        }
        .map(\.element)
    }

    /// Whether `column` is `Z<digits>_<suffix>`: the destination-entity column of a to-one.
    package static func isEntityColumn(_ column: String, for suffix: String) -> Bool {
        let upper = column.uppercased()
        guard upper.hasPrefix("Z"), let underscore = upper.firstIndex(of: "_") else { return false }
        let digits = upper[upper.index(after: upper.startIndex)..<underscore]
        return !digits.isEmpty && digits.allSatisfy(\.isNumber) && upper[upper.index(after: underscore)...] == suffix
    }

    /// The entity that declares `relationship`, starting from `entity` and walking up.
    package static func declaringEntity(of relationship: String, from entity: EntityID, in model: ManagedObjectModel)
        -> EntityID
    {
        var current = entity
        while let parent = model[current].parentID,
            !model[current].relationships.contains(where: { $0.name == relationship })
        {
            current = parent
        }
        return current
    }

    /// Finds a join table among `candidates` and sets which of its columns holds A's and B's keys.
    private static func discoverJoinTable(
        schema: FileSchema, candidates: [String], aColumn: inout String, bColumn: inout String, aZent: Int64,
        bZent: Int64, aRelName: String, bRelName: String
    ) -> String? {
        for candidate in candidates {
            guard let table = schema.table(named: candidate) else { continue }
            let keys = table.columns.map(\.name).filter { !$0.uppercased().hasPrefix("Z_FOK_") }
            guard keys.count == 2 else { continue }
            let upper = keys.map { $0.uppercased() }
            // The column holding B's key ends with A's relationship name (or is REFLEXIVE).
            if let b = upper.firstIndex(where: { $0 == bColumn.uppercased() || $0 == "REFLEXIVE" }) {
                bColumn = keys[b]
                aColumn = keys[1 - b]
            } else if let a = upper.firstIndex(where: { $0 == aColumn.uppercased() }) {
                aColumn = keys[a]
                bColumn = keys[1 - a]
            } else if let a = upper.firstIndex(where: { $0.hasPrefix("Z_\(aZent)") && $0.hasSuffix(bRelName) }) {
                aColumn = keys[a]
                bColumn = keys[1 - a]
            } else if let b = upper.firstIndex(where: { $0.hasPrefix("Z_\(bZent)") && $0.hasSuffix(aRelName) }) {
                bColumn = keys[b]
                aColumn = keys[1 - b]
            } else {
                aColumn = keys[0]
                bColumn = keys[1]
            }
            return table.name
        }
        return nil
    }

    /// Matches model entities to Z_PRIMARYKEY rows: by name, then renaming identifier, then the
    /// only unmatched row under the same parent, then the same number. Names in Z_PRIMARYKEY can
    /// be stale after a Core Data migration that renamed an entity.
    private static func matchEntities(model: ManagedObjectModel, rows: [FileSchema.EntityRow], logger: Logger)
        -> [EntityID: Int64]
    {
        var result: [EntityID: Int64] = [:]
        var used = Set<Int64>()
        let byName = Dictionary(rows.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entity in model.entities {
            if let row = byName[entity.name], !used.contains(row.zent) {
                result[entity.id] = row.zent
                used.insert(row.zent)
            }
        }
        for entity in model.entities where result[entity.id] == nil {
            if let old = entity.renamingIdentifier, let row = byName[old], !used.contains(row.zent) {
                result[entity.id] = row.zent
                used.insert(row.zent)
            }
        }
        for entity in model.entities where result[entity.id] == nil {
            let parentZent: Int64? = entity.parentID.map { result[$0] } ?? 0
            guard let parentZent else { continue }
            let candidates = rows.filter { $0.superZent == parentZent && !used.contains($0.zent) }
            let sameNumber = candidates.first { $0.zent == Int64(entity.id.rawValue) }
            if let row = candidates.count == 1 ? candidates[0] : sameNumber {
                logger.notice("entity \(entity.name) matched to Z_PRIMARYKEY row \(row.zent) named \(row.name)")
                result[entity.id] = row.zent
                used.insert(row.zent)
            } else {
                logger.warning("entity \(entity.name) has no row in Z_PRIMARYKEY; it reads as empty")
            }
        }
        return result
    }
}
