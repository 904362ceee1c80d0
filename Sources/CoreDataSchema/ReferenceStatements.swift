import ObjectGraph

/// The statements `storefs doctor` makes of ``ReferenceChecks``, and the findings it builds from
/// their answers, once for both engines: the SQL is standard (identifiers in double quotes, TRUE
/// and FALSE, COALESCE), which SQLite and PostgreSQL run as written. Each engine runs them on its
/// own connections (SQLiteStore/Health, PostgresStore+Health.swift) and passes one reader: a
/// statement's rows, as integers. Numbers put into the text are Z_ENTs from the
/// layout and limits from the command line, never values read from a store.
extension ReferenceChecks {
    /// The persistent history's tables, as Core Data names them.
    package static let historyTables = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]

    /// One row: the transactions' count, lowest and highest keys, oldest and newest timestamps.
    package static let historyRange =
        "SELECT COUNT(*), MIN(\"Z_PK\"), MAX(\"Z_PK\"), MIN(\"ZTIMESTAMP\"), MAX(\"ZTIMESTAMP\") FROM \"ATRANSACTION\""
    package static let historyChanges = "SELECT COUNT(*) FROM \"ACHANGE\""
    package static let historyStrings = "SELECT COUNT(*) FROM \"ATRANSACTIONSTRING\""
    package static let changesWithoutTransaction =
        "SELECT COUNT(*) FROM \"ACHANGE\" c WHERE NOT EXISTS (SELECT 1 FROM \"ATRANSACTION\" t WHERE t.\"Z_PK\" = c.\"ZTRANSACTIONID\")"

    /// An identifier in double quotes (a quote inside doubled).
    package static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `(1, 2, 3)`: Z_ENT numbers as an SQL list; `(NULL)` for none, which matches no row.
    package static func list(_ zents: [Int64]) -> String {
        zents.isEmpty ? "(NULL)" : "(" + zents.map(String.init).joined(separator: ", ") + ")"
    }

    /// `EXISTS` of a row of `table` with key `key` and one of `zents`; FALSE when the store has no
    /// such table.
    package static func exists(in table: String?, zents: [Int64], key: String) -> String {
        guard let table else { return "FALSE" }
        return
            "EXISTS (SELECT 1 FROM \(quoted(table)) x WHERE x.\"Z_PK\" = \(key) AND x.\"Z_ENT\" IN \(list(zents)))"
    }

    /// `FROM … WHERE …` of the rows (alias `s`) whose to-one key names no row of the destination.
    package static func dangling(_ check: ToOne) -> String {
        let key = "s.\(quoted(check.column))"
        let missing =
            check.destinationTable.map { _ in
                "NOT " + exists(in: check.destinationTable, zents: check.destinationZents, key: key)
            } ?? "TRUE"
        return
            "FROM \(quoted(check.table)) s WHERE s.\"Z_ENT\" IN \(list(check.zents)) AND \(key) IS NOT NULL AND \(missing)"
    }

    /// Whether the hidden key `key` of a to-many without inverse names no row of its source.
    package static func dangles(_ hidden: HiddenKey, key: String) -> String {
        "\(key) IS NOT NULL AND NOT \(exists(in: hidden.sourceTable, zents: hidden.sourceZents, key: key))"
    }

    /// Whether join row `j` names a row at `end`.
    static func exists(_ end: JoinEnd) -> String {
        exists(in: end.table, zents: end.zents, key: "j.\(quoted(end.column))")
    }

    /// The dangling to-ones, first `limit`: each row's key, Z_ENT and the key it names.
    static func danglingToOnes(_ check: ToOne, limit: Int) -> String {
        "SELECT s.\"Z_PK\", s.\"Z_ENT\", s.\(quoted(check.column)) \(dangling(check)) ORDER BY 1 LIMIT \(limit)"
    }

    /// The join rows whose `present` end exists and whose `absent` end does not, first `limit`:
    /// the present key, its row's Z_ENT, the absent key. nil when `present` has no table.
    static func danglingMembers(of join: JoinTable, present: JoinEnd, absent: JoinEnd, limit: Int) -> String? {
        guard let table = present.table else { return nil }
        return
            "SELECT j.\(quoted(present.column)), s.\"Z_ENT\", j.\(quoted(absent.column)) FROM \(quoted(join.table)) j "
            + "JOIN \(quoted(table)) s ON s.\"Z_PK\" = j.\(quoted(present.column)) AND s.\"Z_ENT\" IN \(list(present.zents)) "
            + "WHERE NOT \(exists(absent)) ORDER BY 1, 3 LIMIT \(limit)"
    }

    // MARK: - Findings

    /// A statement's rows, each column an integer (nil for NULL or another type).
    package typealias IntegerRows = [[Int64?]]

    /// Dangling to-ones, dangling to-many members and rows of unknown entities, into `orphans`,
    /// with up to `examples` keys each; `rows` runs a statement.
    package func findOrphans<E: Error>(
        in orphans: inout OrphanFindings, model: ManagedObjectModel, examples: Int,
        rows: (String) throws(E) -> IntegerRows
    ) throws(E) {
        // Plain loops rather than optional chains: the release optimizer crashed on a nested one here.
        func count(_ sql: String) throws(E) -> Int64 {
            let answer = try rows(sql)
            guard let row = answer.first, let value = row.first else { return 0 }
            return value ?? 0
        }
        func keys(_ sql: String) throws(E) -> [Int64] {
            var keys: [Int64] = []
            for row in try rows(sql) {
                if let first = row.first, let key = first { keys.append(key) }
            }
            return keys
        }
        orphans.toOne = try danglingToOneGroups(model: model, examples: examples, count: count, keys: keys)
        orphans.toMany = try danglingToManyGroups(model: model, examples: examples, count: count, keys: keys)
        orphans.rows = try unknownEntityRows(examples: examples, rows: rows, keys: keys)
    }

    /// The to-one references that name no object, by relationship, with up to `examples` keys.
    func danglingToOneGroups<E: Error>(
        model: ManagedObjectModel, examples: Int, count: (String) throws(E) -> Int64,
        keys: (String) throws(E) -> [Int64]
    ) throws(E) -> [ReferenceGroup] {
        var groups: [ReferenceGroup] = []
        for check in toOne {
            let clause = Self.dangling(check)
            let found = try count("SELECT COUNT(*) \(clause)")
            guard found > 0 else { continue }
            groups.append(
                ReferenceGroup(
                    entity: model[check.entity].name, relationship: check.relationship, count: Int(found),
                    examples: try keys("SELECT s.\"Z_PK\" \(clause) ORDER BY 1 LIMIT \(examples)"),
                    place: "\(check.table).\(check.column)"))
        }
        return groups
    }

    /// The join rows naming an object that does not exist (seen from the end that exists, then
    /// rows with neither end), and the hidden keys of to-manys without inverse naming a missing
    /// source.
    func danglingToManyGroups<E: Error>(
        model: ManagedObjectModel, examples: Int, count: (String) throws(E) -> Int64,
        keys: (String) throws(E) -> [Int64]
    ) throws(E) -> [ReferenceGroup] {
        var groups: [ReferenceGroup] = []
        func add(_ entity: EntityID, _ relationship: String, from clause: String, key: String, place: String)
            throws(E)
        {
            let found = try count("SELECT COUNT(*) \(clause)")
            guard found > 0 else { return }
            groups.append(
                ReferenceGroup(
                    entity: model[entity].name, relationship: relationship, count: Int(found),
                    examples: try keys("SELECT \(key) \(clause) ORDER BY 1 LIMIT \(examples)"), place: place))
        }
        for join in joinTables {
            let rows = "FROM \(Self.quoted(join.table)) j WHERE"
            let source = Self.exists(join.source)
            let destination = Self.exists(join.destination)
            let sourceKey = "j.\(Self.quoted(join.source.column))"
            let destinationKey = "j.\(Self.quoted(join.destination.column))"
            try add(
                join.source.entity, join.source.relationship, from: "\(rows) \(source) AND NOT \(destination)",
                key: sourceKey, place: join.table)
            try add(
                join.destination.entity,
                join.destination.relationship.isEmpty ? join.source.relationship : join.destination.relationship,
                from: "\(rows) \(destination) AND NOT \(source)", key: destinationKey, place: join.table)
            try add(
                join.source.entity, join.source.relationship, from: "\(rows) NOT \(source) AND NOT \(destination)",
                key: sourceKey, place: join.table + " (neither end exists)")
        }
        for hidden in hiddenKeys {
            let clause =
                "FROM \(Self.quoted(hidden.table)) h WHERE \(Self.dangles(hidden, key: "h.\(Self.quoted(hidden.column))"))"
            try add(
                hidden.entity, hidden.relationship, from: clause, key: "h.\"Z_PK\"",
                place: "\(hidden.table).\(hidden.column) (rows naming a missing source)")
        }
        return groups
    }

    /// Rows of each entity table whose Z_ENT no entity of the tree has, by Z_ENT (0 for NULL).
    func unknownEntityRows<E: Error>(
        examples: Int, rows: (String) throws(E) -> IntegerRows, keys: (String) throws(E) -> [Int64]
    ) throws(E) -> [UnknownEntityRows] {
        var found: [UnknownEntityRows] = []
        for table in entityTables {
            let clause =
                "FROM \(Self.quoted(table.table)) WHERE (\"Z_ENT\" IS NULL OR \"Z_ENT\" NOT IN \(Self.list(table.zents)))"
            for row in try rows("SELECT COALESCE(\"Z_ENT\", 0), COUNT(*) \(clause) GROUP BY 1") where row.count == 2 {
                let zent = row[0] ?? 0
                let examples = try keys(
                    "SELECT \"Z_PK\" \(clause) AND COALESCE(\"Z_ENT\", 0) = \(zent) ORDER BY 1 LIMIT \(examples)")
                found.append(
                    UnknownEntityRows(table: table.table, zent: zent, count: Int(row[1] ?? 0), examples: examples))
            }
        }
        return found
    }

    /// The first `limit` dangling to-ones, each as the object, its relationship and the key it names.
    package func danglingToOnes<E: Error>(
        layout: StoreLayout, limit: Int, rows: (String) throws(E) -> IntegerRows
    ) throws(E) -> [DanglingReference] {
        var found: [DanglingReference] = []
        for check in toOne where found.count < limit {
            let answer = try rows(Self.danglingToOnes(check, limit: limit - found.count))
            found += Self.references(answer, layout: layout, relationship: check.relationship, to: check.destination)
        }
        return found
    }

    /// The first `limit` join rows naming a missing member, seen from each end that exists (and
    /// has a relationship to name).
    package func danglingToManyMembers<E: Error>(
        layout: StoreLayout, limit: Int, rows: (String) throws(E) -> IntegerRows
    ) throws(E) -> [DanglingReference] {
        var found: [DanglingReference] = []
        for join in joinTables {
            for (present, absent) in [(join.source, join.destination), (join.destination, join.source)]
            where found.count < limit && !present.relationship.isEmpty {
                guard
                    let sql = Self.danglingMembers(
                        of: join, present: present, absent: absent, limit: limit - found.count)
                else { continue }
                found += Self.references(
                    try rows(sql), layout: layout, relationship: present.relationship, to: absent.entity)
            }
        }
        return found
    }

    /// (key, Z_ENT, missing key) rows as references; a row with a NULL or an unknown Z_ENT is skipped.
    static func references(
        _ rows: IntegerRows, layout: StoreLayout, relationship: String, to destination: EntityID
    ) -> [DanglingReference] {
        rows.compactMap { row in
            guard row.count == 3, let key = row[0], let zent = row[1], let entity = layout.entityByZent[zent],
                let missing = row[2]
            else { return nil }
            return DanglingReference(
                object: ObjectID(entity: entity, key: PrimaryKey(key)), relationship: relationship,
                missing: ObjectID(entity: destination, key: PrimaryKey(missing)))
        }
    }

    // MARK: - Repairs

    /// The to-one check that `reference` breaks (checked where the relationship is declared).
    package func check(of reference: DanglingReference, in model: ManagedObjectModel) -> ToOne? {
        let declaring = StoreLayout.declaringEntity(
            of: reference.relationship, from: reference.object.entity, in: model)
        return toOne.first { $0.entity == declaring && $0.relationship == reference.relationship }
    }

    /// Nullifies one dangling to-one as Core Data's Nullify does (the key, its entity and order
    /// columns; Z_OPT + 1): placeholders `object` and `missing` stand for the two keys, so the row
    /// changes only if it still names the missing object.
    package static func nullify(_ check: ToOne, object: String, missing: String) -> String {
        var sets = ["\(quoted(check.column)) = NULL"]
        if let column = check.entityColumn { sets.append("\(quoted(column)) = NULL") }
        if let column = check.orderColumn { sets.append("\(quoted(column)) = NULL") }
        sets.append("\"Z_OPT\" = \"Z_OPT\" + 1")
        return
            "UPDATE \(quoted(check.table)) SET \(sets.joined(separator: ", ")) WHERE \"Z_PK\" = \(object) AND \(quoted(check.column)) = \(missing)"
    }

    /// Deletes the join rows of which neither end exists (no save reaches them).
    package static func removeUnreachableRows(of join: JoinTable) -> String {
        "DELETE FROM \(quoted(join.table)) AS j WHERE NOT \(exists(join.source)) AND NOT \(exists(join.destination))"
    }

    /// Clears the hidden keys naming a missing source (and their order column; Z_OPT + 1).
    package static func clearDanglingKeys(_ hidden: HiddenKey) -> String {
        let order = hidden.orderColumn.map { ", \(quoted($0)) = NULL" } ?? ""
        return
            "UPDATE \(quoted(hidden.table)) AS h SET \(quoted(hidden.column)) = NULL\(order), \"Z_OPT\" = h.\"Z_OPT\" + 1 "
            + "WHERE \(dangles(hidden, key: "h.\(quoted(hidden.column))"))"
    }
}
