import CoreDataSchema
import Foundation
import Logging
import ObjectGraph

/// Builds a model from an SQLite store's schema alone, for stores that hold no model (neither
/// storefs's StoreFSModel nor Core Data's Z_MODELCACHE: stores written before about 2013).
///
/// The schema does not say everything the model did; docs/MODELS.md lists what is lost. Rules:
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
/// - An INTEGER column with an index on it alone (`Z<TABLE>_Z<COL>_INDEX`, which Core Data gives
///   every to-one) or with a `Z<n>_<COL>` companion is a to-one relationship. Its destination is
///   entity n when the companion exists; else the entity named like the column (`ZRECIPE` →
///   Recipe); else the only entity whose name ends like it (`ZTYPE` → RecipeType) when every key
///   the column holds exists in that entity's table. With none, it stays an Integer 64 attribute.
/// - Two to-ones that point at each other's entities are one one-to-one relationship (each the
///   other's inverse). Every other inferred to-one gets an inverse to-many on its destination,
///   named after the source entity in the plural (`Recipe.ingredients` for `Ingredient.recipe`;
///   `<plural>_<column>` when several columns of one entity point at the same destination). So
///   deleting an object clears every key that points at it (the Nullify rule on both sides).
/// - A join table `Z_<n><REL>` with two key columns is a many-to-many: `rel` on entity n, its
///   inverse (named from the other key column) on the entity of that column's number;
///   `REFLEXIVE` marks a relationship that is its own inverse; `Z_FOK_` columns make a side ordered.
/// - A hidden key column `Z<n><REL>` (Core Data's storage of a to-many without inverse) is the
///   to-many `rel` of entity n, without inverse, as Core Data declared it.
/// - Book-keeping columns are skipped: Z_PK, Z_ENT, Z_OPT, Z_FOK_* and Z<n>_<REL>.
enum SchemaInference {
    /// Whether every non-null value of `column` in `table` is a Z_PK of `destinationTable`; asked
    /// before a to-one is guessed from a name that only ends like its destination's.
    typealias KeysFit = (_ table: String, _ column: String, _ destinationTable: String) -> Bool

    static func infer(from schema: FileSchema, file: String, logger: Logger, keysFit: KeysFit = { _, _, _ in false })
        throws(ObjectGraphError) -> ManagedObjectModel
    {
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
        let rowsByZent = Dictionary(schema.entityRows.map { ($0.zent, $0) }, uniquingKeysWith: { a, _ in a })
        /// The top of `zent`'s Z_SUPER chain; a loop (Z_SUPER cycles in a damaged file) stops at
        /// the first entity seen twice, and the model then reports the cycle.
        func root(_ zent: Int64) -> Int64 {
            var current = zent
            var seen: Set<Int64> = [zent]
            while let row = rowsByZent[current], row.superZent != 0, names[row.superZent] != nil,
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
        func tableName(of zent: Int64) -> String? {
            guard let rootZent = rootOf[zent], let name = names[rootZent] else { return nil }
            return
                (schema.table(named: StoreLayout.tableName(forRoot: name))
                ?? rowsByZent[rootZent].flatMap { schema.table(named: StoreLayout.tableName(forRoot: $0.name)) })?.name
        }

        /// Inferred to-ones: (source Z_ENT, relationship name, destination Z_ENT).
        var toOnes: [(source: Int64, name: String, destination: Int64)] = []
        for row in schema.entityRows where rootOf[row.zent] == row.zent {
            guard let table = tableName(of: row.zent).flatMap({ schema.table(named: $0) }) else {
                logger.warning("\(file): no table for entity \(names[row.zent] ?? "Entity\(row.zent)")")
                continue
            }
            let upperColumns = table.columns.map { $0.name.uppercased() }
            for column in table.columns {
                let upper = column.name.uppercased()
                if upper.hasPrefix("Z_") { continue }
                if isNumbered(upper) { continue }
                let suffix = upper.hasPrefix("Z") ? String(upper.dropFirst()) : upper
                let base = suffix.lowercased()
                if column.type.hasPrefix("INTEGER") {
                    let entityColumn = upperColumns.first { StoreLayout.isEntityColumn($0, for: suffix) }
                    let indexed = schema.hasSingleColumnIndex(on: column.name, in: table.name)
                    var destination: Int64?
                    if let entityColumn {
                        destination = Int64(entityColumn.dropFirst().prefix(while: \.isNumber))
                    } else if indexed {
                        destination = zentByUpperName[suffix]
                        if destination == nil, suffix.count >= 3 {
                            let endingLikeIt = zentByUpperName.filter { $0.key.hasSuffix(suffix) }
                            if endingLikeIt.count == 1, let candidate = endingLikeIt.first?.value,
                                let destinationTable = tableName(of: candidate),
                                keysFit(table.name, column.name, destinationTable)
                            {
                                destination = candidate
                            }
                        }
                    }
                    if let destination, let destinationName = names[destination] {
                        let name = claim(base, tree: row.zent)
                        entities[row.zent]?.relationships.append(
                            RelationshipDescription(name: name, destinationEntityName: destinationName))
                        toOnes.append((row.zent, name, destination))
                        continue
                    }
                }
                let name = claim(base, tree: row.zent)
                entities[row.zent]?.attributes.append(
                    AttributeDescription(name: name, type: attributeType(column.type)))
            }
        }
        pairInverses(toOnes, names: names, rootOf: rootOf, entities: &entities, taken: &taken)
        inferJoinTables(
            schema: schema, names: names, rootOf: rootOf, entities: &entities, taken: &taken, logger: logger)
        inferHiddenToManyColumns(
            schema: schema, names: names, rootOf: rootOf, table: tableName, entities: &entities, taken: &taken)

        do {
            return try ManagedObjectModel(entities: schema.entityRows.compactMap { entities[$0.zent] })
        } catch {
            throw ObjectGraphError(
                .corruptStore, "\(file): the model inferred from its schema is inconsistent: \(error.message)")
        }
    }

    /// Makes inferred to-ones two-sided: mutual pairs become one-to-ones, the rest get a to-many
    /// inverse on their destination.
    private static func pairInverses(
        _ toOnes: [(source: Int64, name: String, destination: Int64)], names: [Int64: String], rootOf: [Int64: Int64],
        entities: inout [Int64: EntityDescription], taken: inout [Int64: Set<String>]
    ) {
        var paired = Set<Int>()
        for (i, a) in toOnes.enumerated() where !paired.contains(i) {
            // The one to-one coming back, and only when each direction has just that one.
            let back = toOnes.indices.filter { j in
                j != i && !paired.contains(j) && toOnes[j].source == a.destination && toOnes[j].destination == a.source
            }
            let forth = toOnes.filter { $0.source == a.source && $0.destination == a.destination }
            guard back.count == 1, forth.count == 1, a.source != a.destination else { continue }
            let b = toOnes[back[0]]
            setInverse(of: a.name, on: a.source, to: b.name, entities: &entities)
            setInverse(of: b.name, on: b.source, to: a.name, entities: &entities)
            paired.insert(i)
            paired.insert(back[0])
        }
        for (i, a) in toOnes.enumerated() where !paired.contains(i) {
            guard let sourceName = names[a.source] else { continue }
            let tree = rootOf[a.destination] ?? a.destination
            let plural = pluralName(of: sourceName)
            let several = toOnes.filter { $0.source == a.source && $0.destination == a.destination }.count > 1
            var name = several ? "\(plural)_\(a.name)" : plural
            var n = 2
            while taken[tree, default: []].contains(name) {
                name = "\(plural)_\(a.name)" + (n > 2 ? "_\(n)" : "")
                n += 1
            }
            taken[tree, default: []].insert(name)
            entities[a.destination]?.relationships.append(
                RelationshipDescription(
                    name: name, destinationEntityName: sourceName, inverseName: a.name, isToMany: true))
            setInverse(of: a.name, on: a.source, to: name, entities: &entities)
        }
    }

    private static func setInverse(
        of relationship: String, on entity: Int64, to inverse: String, entities: inout [Int64: EntityDescription]
    ) {
        guard let index = entities[entity]?.relationships.firstIndex(where: { $0.name == relationship }) else { return }
        entities[entity]?.relationships[index].inverseName = inverse
    }

    /// `Ingredient` → `ingredients`, `Category` → `categories`, `Address` → `addresses`.
    static func pluralName(of entity: String) -> String {
        guard let first = entity.first else { return "objects" }
        var word = first.lowercased() + entity.dropFirst()
        let lower = word.lowercased()
        if lower.hasSuffix("s") || lower.hasSuffix("x") || lower.hasSuffix("z") || lower.hasSuffix("ch")
            || lower.hasSuffix("sh")
        {
            return word + "es"
        }
        if lower.hasSuffix("y"), let beforeY = lower.dropLast().last, !"aeiou".contains(beforeY) {
            word.removeLast()
            return word + "ies"
        }
        return word + "s"
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
                reflexive || !taken[bTree, default: []].contains(inverseName),
                reflexive || aZent != bZent || relName != inverseName
            else {
                logger.warning("join table \(table.name): its relationship names are taken; it is not mapped")
                continue
            }
            taken[aTree, default: []].insert(relName)
            entities[aZent]?.relationships.append(
                RelationshipDescription(
                    name: relName, destinationEntityName: bName, inverseName: reflexive ? relName : inverseName,
                    isToMany: true,
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

    /// `Z<n><REL>` in entity E's table: entity n's to-many `rel` to E, declared without inverse.
    private static func inferHiddenToManyColumns(
        schema: FileSchema, names: [Int64: String], rootOf: [Int64: Int64], table: (Int64) -> String?,
        entities: inout [Int64: EntityDescription], taken: inout [Int64: Set<String>]
    ) {
        for row in schema.entityRows where rootOf[row.zent] == row.zent {
            guard let tableName = table(row.zent), let destinationName = names[row.zent] else { continue }
            for column in schema.columns(of: tableName) {
                let upper = column.name.uppercased()
                guard isNumbered(upper), !upper.contains("_"),
                    let source = Int64(upper.dropFirst().prefix(while: \.isNumber)), names[source] != nil
                else { continue }
                let relUpper = String(upper.dropFirst().drop(while: \.isNumber))
                let tree = rootOf[source] ?? source
                guard !relUpper.isEmpty, !taken[tree, default: []].contains(relUpper.lowercased()) else { continue }
                let name = relUpper.lowercased()
                taken[tree, default: []].insert(name)
                entities[source]?.relationships.append(
                    RelationshipDescription(
                        name: name, destinationEntityName: destinationName, isToMany: true,
                        isOrdered: schema.hasColumn("Z_FOK_" + upper.dropFirst(), in: tableName)))
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
