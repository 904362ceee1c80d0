import Foundation
import Logging
import ObjectGraph

/// Builds a model from an SQLite store's schema alone, for stores opened without a model.
///
/// Rules (a best effort: the schema does not say everything the model did):
/// - Entities and inheritance come from Z_PRIMARYKEY rows below 16000 (Z_NAME, Z_SUPER). An empty
///   or repeated name becomes `Entity<Z_ENT>`.
/// - Property names are the column name minus its leading `Z`, lower-cased (`ZPOSTID` → `postid`):
///   the original camel case is not in the file. A name already taken in the inheritance tree
///   gets `_2`, `_3`... appended.
/// - Single-table inheritance hides which subentity owns a column, so every attribute column goes
///   on the root entity and every subentity inherits all of them.
/// - Attribute type by declared column type: INTEGER → Integer 64, FLOAT → Double, DECIMAL →
///   Decimal, TIMESTAMP → Date, VARCHAR → String, BLOB → Binary; other declared types by SQLite's
///   affinity rules (INT → Integer 64, CHAR/TEXT → String, REAL/FLOA/DOUB → Double, else String).
/// - An INTEGER column with an index on it alone (`Z<TABLE>_Z<COL>_INDEX`) or with a `Z<n>_<COL>`
///   companion is a to-one relationship. Its destination is entity n when the companion exists,
///   else the entity whose upper-cased name is the column's; with neither it stays an Integer 64
///   attribute. Inferred to-ones have no inverse (the schema does not pair them).
/// - A join table `Z_<n><REL>` with two key columns is a many-to-many: `rel` on entity n, its
///   inverse (named from the other key column) on the entity of that column's number;
///   `REFLEXIVE` marks a relationship that is its own inverse; `Z_FOK_` columns make a side ordered.
/// - Book-keeping columns are skipped: Z_PK, Z_ENT, Z_OPT, Z_FOK_*, Z<n>_<REL>, and hidden keys of
///   to-many relationships without inverse (`Z<n><REL>`).
enum SchemaInference {
    static func infer(from schema: FileSchema, file: String, logger: Logger) throws(ObjectGraphError) -> ManagedObjectModel {
        var names: [Int64: String] = [:]
        var used = Set<String>()
        for row in schema.entityRows {
            var name = row.name
            if name.isEmpty || used.contains(name) { name = "Entity\(row.zent)" }
            used.insert(name)
            names[row.zent] = name
        }
        var entities: [Int64: EntityDescription] = [:]
        var rootOf: [Int64: Int64] = [:]
        let rowByZent = Dictionary(schema.entityRows.map { ($0.zent, $0) }, uniquingKeysWith: { a, _ in a })
        /// The top of `zent`'s Z_SUPER chain; a loop (Z_SUPER cycles in a damaged file) stops at
        /// the first entity seen twice, and the model then reports the cycle.
        func root(_ zent: Int64) -> Int64 {
            var current = zent
            var seen: Set<Int64> = [zent]
            while let row = rowByZent[current], row.superZent != 0, names[row.superZent] != nil,
                seen.insert(row.superZent).inserted
            {
                current = row.superZent
            }
            return current
        }
        for row in schema.entityRows {
            let parent = row.superZent != 0 && row.superZent != row.zent ? names[row.superZent] : nil
            entities[row.zent] = EntityDescription(name: names[row.zent] ?? "Entity\(row.zent)", parentName: parent)
            rootOf[row.zent] = root(row.zent)
        }
        // Property names taken per inheritance tree (by root Z_ENT).
        var taken: [Int64: Set<String>] = [:]
        func claim(_ base: String, tree: Int64) -> String {
            var name = base.isEmpty ? "property" : base
            var n = 2
            while taken[tree, default: []].contains(name) {
                name = "\(base)_\(n)"
                n += 1
            }
            taken[tree, default: []].insert(name)
            return name
        }
        let zentByUpperName = Dictionary(names.map { ($0.value.uppercased(), $0.key) }, uniquingKeysWith: { a, _ in a })

        for row in schema.entityRows where rootOf[row.zent] == row.zent {
            let name = names[row.zent] ?? "Entity\(row.zent)"
            guard let table = schema.table(named: StoreLayout.tableName(forRoot: name))
                ?? schema.table(named: StoreLayout.tableName(forRoot: row.name))
            else {
                logger.warning("\(file): no table for entity \(name)")
                continue
            }
            let upperColumns = table.columns.map { $0.name.uppercased() }
            for column in table.columns {
                let upper = column.name.uppercased()
                if ["Z_PK", "Z_ENT", "Z_OPT"].contains(upper) || upper.hasPrefix("Z_") { continue }
                if isNumbered(upper) { continue }
                let suffix = upper.hasPrefix("Z") ? String(upper.dropFirst()) : upper
                let base = suffix.lowercased()
                if column.type.hasPrefix("INTEGER") {
                    let entityColumn = upperColumns.first { StoreLayout.isEntityColumn($0, for: suffix) }
                    let indexed = schema.hasSingleColumnIndex(on: column.name, in: table.name)
                    if indexed || entityColumn != nil {
                        var destination: Int64?
                        if let entityColumn {
                            destination = Int64(entityColumn.dropFirst().prefix(while: \.isNumber))
                        } else {
                            destination = zentByUpperName[suffix]
                        }
                        if let destination, let destinationName = names[destination] {
                            let name = claim(base, tree: row.zent)
                            entities[row.zent]?.relationships.append(
                                RelationshipDescription(name: name, destinationEntityName: destinationName))
                            continue
                        }
                    }
                }
                let name = claim(base, tree: row.zent)
                entities[row.zent]?.attributes.append(AttributeDescription(name: name, type: attributeType(column.type)))
            }
        }
        inferJoinTables(schema: schema, names: names, rootOf: rootOf, entities: &entities, taken: &taken, logger: logger)

        do {
            return try ManagedObjectModel(entities: schema.entityRows.compactMap { entities[$0.zent] })
        } catch {
            throw ObjectGraphError(.corruptStore, "\(file): the model inferred from its schema is inconsistent: \(error.message)")
        }
    }

    private static func inferJoinTables(
        schema: FileSchema, names: [Int64: String], rootOf: [Int64: Int64], entities: inout [Int64: EntityDescription],
        taken: inout [Int64: Set<String>], logger: Logger
    ) {
        for (upperName, table) in schema.tables.sorted(by: { $0.key < $1.key }) {
            guard upperName.hasPrefix("Z_"), let aZent = Int64(upperName.dropFirst(2).prefix(while: \.isNumber)),
                let aName = names[aZent]
            else { continue }
            let relUpper = String(upperName.dropFirst(2).drop(while: \.isNumber))
            let columns = table.columns.map { $0.name.uppercased() }
            let keys = columns.filter { !$0.hasPrefix("Z_FOK_") }
            guard !relUpper.isEmpty, keys.count == 2, !columns.contains("Z_PK") else { continue }
            let bIndex = keys.firstIndex(of: "REFLEXIVE") ?? keys.firstIndex { $0.hasSuffix(relUpper) } ?? 1
            let bColumn = keys[bIndex]
            let aColumn = keys[1 - bIndex]
            let relName = relUpper.lowercased()
            let reflexive = bColumn == "REFLEXIVE"
            let bZent = reflexive ? aZent : Int64(bColumn.dropFirst(2).prefix(while: \.isNumber))
            guard let bZent, let bName = names[bZent] else { continue }
            let inverseName = reflexive ? relName : String(aColumn.dropFirst(2).drop(while: \.isNumber)).lowercased()
            let aTree = rootOf[aZent] ?? aZent
            let bTree = rootOf[bZent] ?? bZent
            guard !inverseName.isEmpty, !taken[aTree, default: []].contains(relName),
                reflexive || !taken[bTree, default: []].contains(inverseName), reflexive || aZent != bZent || relName != inverseName
            else {
                logger.warning("join table \(table.name): its relationship names are taken; it is not mapped")
                continue
            }
            taken[aTree, default: []].insert(relName)
            entities[aZent]?.relationships.append(
                RelationshipDescription(
                    name: relName, destinationEntityName: bName, inverseName: reflexive ? relName : inverseName, isToMany: true,
                    isOrdered: columns.contains("Z_FOK_" + bColumn.dropFirst(2))))
            if !reflexive {
                taken[bTree, default: []].insert(inverseName)
                entities[bZent]?.relationships.append(
                    RelationshipDescription(
                        name: inverseName, destinationEntityName: aName, inverseName: relName, isToMany: true,
                        isOrdered: columns.contains("Z_FOK_" + aColumn.dropFirst(2))))
            }
        }
    }

    /// `Z<digits>...`: a destination-entity column or a hidden to-many key, not a property.
    private static func isNumbered(_ upper: String) -> Bool {
        upper.hasPrefix("Z") && upper.dropFirst().first?.isNumber == true
    }

    static func attributeType(_ declared: String) -> AttributeType {
        let type = declared.uppercased()
        if type.hasPrefix("INTEGER") { return .integer64 }
        if type.hasPrefix("FLOAT") { return .double }
        if type.hasPrefix("DECIMAL") { return .decimal }
        if type.hasPrefix("TIMESTAMP") { return .date }
        if type.hasPrefix("VARCHAR") { return .string }
        if type.hasPrefix("BLOB") { return .binaryData }
        if type.contains("INT") { return .integer64 }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .string }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return .double }
        return .string
    }
}
