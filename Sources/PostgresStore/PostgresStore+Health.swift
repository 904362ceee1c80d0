import CoreDataSchema
import Foundation
import ObjectGraph

// `storefs doctor` on a PostgreSQL store: every statement it runs to examine and repair one is in
// this file. They are SQLiteStore/Health's statements (the same standard SQL, with PostgreSQL's
// quoting and placeholders), from the same dialect-free ``ReferenceChecks``: both are ready to
// move into a relational core shared by the two engines. What a save can express (a nullified
// to-one, a removed member, a deleted object) goes through ``save(_:)`` instead (StoreRepair.swift),
// so other machines' mounts hear of it through the store's announcements.
extension PostgresStore: RepairableStore {
    public func examine(examples: Int) throws(ObjectGraphError) -> StoreExamination {
        let checks = ReferenceChecks(layout: layout, model: model)
        var examination = StoreExamination()
        let tables = try tableBytes()
        var space = StoreSpace()
        space.tables = tables
        space.bytes = tables.values.reduce(0, +)
        space.measuredWith = "pg_total_relation_size"
        examination.space = space
        examination.entityBytes = try entityBytes(checks, tables: tables)
        examination.history = try historySummary(tables: tables)
        examination.orphans.toOne = try danglingToOneGroups(checks, examples: examples)
        examination.orphans.toMany = try danglingToManyGroups(checks, examples: examples)
        examination.orphans.rows = try unknownEntityRows(checks, examples: examples)
        // Keys come from Z_MAX raised to the highest key in the same statement (reserveKeys): a
        // counter behind its rows hands out no key twice, so none is reported.
        examination.integrity = IntegrityCheck(
            checked: false, method: "PostgreSQL keeps its own pages consistent (WAL, checksums); no check is run")
        return examination
    }

    public func danglingToOnes(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        let checks = ReferenceChecks(layout: layout, model: model)
        var found: [DanglingReference] = []
        for check in checks.toOne where found.count < limit {
            let rows = try read(
                "SELECT s.\"Z_PK\", s.\"Z_ENT\", s.\(q(check.column)) \(danglingToOneClause(check)) ORDER BY s.\"Z_PK\" LIMIT \(limit - found.count)"
            )
            for row in 0..<rows.rowCount {
                guard let key = rows.integer(row, 0), let zent = rows.integer(row, 1),
                    let entity = layout.entityByZent[zent], let missing = rows.integer(row, 2)
                else { continue }
                found.append(
                    DanglingReference(
                        object: ObjectID(entity: entity, key: PrimaryKey(key)), relationship: check.relationship,
                        missing: ObjectID(entity: check.destination, key: PrimaryKey(missing))))
            }
        }
        return found
    }

    public func danglingToManyMembers(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        let checks = ReferenceChecks(layout: layout, model: model)
        var found: [DanglingReference] = []
        for join in checks.joinTables {
            for (present, absent) in [(join.source, join.destination), (join.destination, join.source)]
            where found.count < limit && !present.relationship.isEmpty {
                guard let presentTable = present.table else { continue }
                let rows = try read(
                    "SELECT j.\(q(present.column)), s.\"Z_ENT\", j.\(q(absent.column)) FROM \(q(join.table)) j "
                        + "JOIN \(q(presentTable)) s ON s.\"Z_PK\" = j.\(q(present.column)) AND s.\"Z_ENT\" IN \(list(present.zents)) "
                        + "WHERE NOT \(exists(absent, key: "j.\(q(absent.column))")) ORDER BY 1, 3 LIMIT \(limit - found.count)"
                )
                for row in 0..<rows.rowCount {
                    guard let key = rows.integer(row, 0), let zent = rows.integer(row, 1),
                        let entity = layout.entityByZent[zent], let missing = rows.integer(row, 2)
                    else { continue }
                    found.append(
                        DanglingReference(
                            object: ObjectID(entity: entity, key: PrimaryKey(key)), relationship: present.relationship,
                            missing: ObjectID(entity: absent.entity, key: PrimaryKey(missing))))
                }
            }
        }
        return found
    }

    // MARK: - Space and history

    /// Bytes of each table of the store's schema, with its indexes and TOAST.
    private func tableBytes() throws(ObjectGraphError) -> [String: Int64] {
        let rows = try read(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                + "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        var tables: [String: Int64] = [:]
        for row in 0..<rows.rowCount {
            if let name = rows.text(row, 0), let bytes = rows.integer(row, 1) { tables[name] = bytes }
        }
        return tables
    }

    private func entityBytes(_ checks: ReferenceChecks, tables: [String: Int64]) throws(ObjectGraphError)
        -> [String: Int64]
    {
        var bytes: [String: Int64] = [:]
        for table in checks.entityTables {
            guard let total = tables[table.table] else { continue }
            let rows = try read("SELECT \"Z_ENT\", COUNT(*) FROM \(q(table.table)) GROUP BY 1")
            var counts: [EntityID: Int64] = [:]
            for row in 0..<rows.rowCount {
                guard let zent = rows.integer(row, 0), let entity = layout.entityByZent[zent],
                    let count = rows.integer(row, 1)
                else { continue }
                counts[entity] = count
            }
            let all = counts.values.reduce(0, +)
            for (entity, count) in counts where all > 0 { bytes[model[entity].name] = total * count / all }
        }
        return bytes
    }

    private func historySummary(tables: [String: Int64]) throws(ObjectGraphError) -> HistorySummary {
        var summary = HistorySummary()
        let first = try read(
            "SELECT COUNT(*), MIN(\"Z_PK\"), MAX(\"Z_PK\"), MIN(\"ZTIMESTAMP\"), MAX(\"ZTIMESTAMP\") FROM \"ATRANSACTION\""
        )
        summary.transactions = Int(first.integer(0, 0) ?? 0)
        summary.firstTransaction = first.integer(0, 1)
        summary.lastTransaction = first.integer(0, 2)
        summary.oldest = first.text(0, 3).flatMap(PostgresValueCoding.double).map(
            Date.init(timeIntervalSinceReferenceDate:))
        summary.newest = first.text(0, 4).flatMap(PostgresValueCoding.double).map(
            Date.init(timeIntervalSinceReferenceDate:))
        func count(_ sql: String) throws(ObjectGraphError) -> Int { Int(try read(sql).integer(0, 0) ?? 0) }
        summary.changes = try count("SELECT COUNT(*) FROM \"ACHANGE\"")
        summary.strings = try count("SELECT COUNT(*) FROM \"ATRANSACTIONSTRING\"")
        summary.changesWithoutTransaction = try count(
            "SELECT COUNT(*) FROM \"ACHANGE\" c WHERE NOT EXISTS (SELECT 1 FROM \"ATRANSACTION\" t WHERE t.\"Z_PK\" = c.\"ZTRANSACTIONID\")"
        )
        summary.bytes = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"].reduce(0) { $0 + (tables[$1] ?? 0) }
        return summary
    }

    // MARK: - Orphans

    private func danglingToOneClause(_ check: ReferenceChecks.ToOne) -> String {
        let key = "s.\(q(check.column))"
        let missing =
            check.destinationTable.map {
                "NOT EXISTS (SELECT 1 FROM \(q($0)) d WHERE d.\"Z_PK\" = \(key) AND d.\"Z_ENT\" IN \(list(check.destinationZents)))"
            } ?? "TRUE"
        return
            "FROM \(q(check.table)) s WHERE s.\"Z_ENT\" IN \(list(check.zents)) AND \(key) IS NOT NULL AND \(missing)"
    }

    private func danglingToOneGroups(_ checks: ReferenceChecks, examples: Int) throws(ObjectGraphError)
        -> [ReferenceGroup]
    {
        var groups: [ReferenceGroup] = []
        for check in checks.toOne {
            let clause = danglingToOneClause(check)
            let count = try read("SELECT COUNT(*) \(clause)").integer(0, 0) ?? 0
            guard count > 0 else { continue }
            let keys = try read("SELECT s.\"Z_PK\" \(clause) ORDER BY 1 LIMIT \(examples)")
            groups.append(
                ReferenceGroup(
                    entity: model[check.entity].name, relationship: check.relationship, count: Int(count),
                    examples: (0..<keys.rowCount).compactMap { keys.integer($0, 0) },
                    place: "\(check.table).\(check.column)"))
        }
        return groups
    }

    private func exists(_ end: ReferenceChecks.JoinEnd, key: String) -> String {
        guard let table = end.table else { return "FALSE" }
        return "EXISTS (SELECT 1 FROM \(q(table)) x WHERE x.\"Z_PK\" = \(key) AND x.\"Z_ENT\" IN \(list(end.zents)))"
    }

    private func danglingToManyGroups(_ checks: ReferenceChecks, examples: Int) throws(ObjectGraphError)
        -> [ReferenceGroup]
    {
        var groups: [ReferenceGroup] = []
        for join in checks.joinTables {
            let source = "j.\(q(join.source.column))"
            let destination = "j.\(q(join.destination.column))"
            let sourceExists = exists(join.source, key: source)
            let destinationExists = exists(join.destination, key: destination)
            let cases: [(ReferenceChecks.JoinEnd, String, String, String)] = [
                (join.source, source, "\(sourceExists) AND NOT \(destinationExists)", ""),
                (join.destination, destination, "\(destinationExists) AND NOT \(sourceExists)", ""),
                (join.source, source, "NOT \(sourceExists) AND NOT \(destinationExists)", " (neither end exists)")
            ]
            for (end, key, condition, note) in cases {
                let count = try read("SELECT COUNT(*) FROM \(q(join.table)) j WHERE \(condition)").integer(0, 0) ?? 0
                guard count > 0 else { continue }
                let keys = try read(
                    "SELECT \(key) FROM \(q(join.table)) j WHERE \(condition) ORDER BY 1 LIMIT \(examples)")
                groups.append(
                    ReferenceGroup(
                        entity: model[end.entity].name,
                        relationship: end.relationship.isEmpty ? join.source.relationship : end.relationship,
                        count: Int(count), examples: (0..<keys.rowCount).compactMap { keys.integer($0, 0) },
                        place: join.table + note))
            }
        }
        for hidden in checks.hiddenKeys {
            let clause = "FROM \(q(hidden.table)) h WHERE \(hiddenKeyDangles(hidden, key: "h.\(q(hidden.column))"))"
            let count = try read("SELECT COUNT(*) \(clause)").integer(0, 0) ?? 0
            guard count > 0 else { continue }
            let keys = try read("SELECT h.\"Z_PK\" \(clause) ORDER BY 1 LIMIT \(examples)")
            groups.append(
                ReferenceGroup(
                    entity: model[hidden.entity].name, relationship: hidden.relationship, count: Int(count),
                    examples: (0..<keys.rowCount).compactMap { keys.integer($0, 0) },
                    place: "\(hidden.table).\(hidden.column) (rows naming a missing source)"))
        }
        return groups
    }

    private func hiddenKeyDangles(_ hidden: ReferenceChecks.HiddenKey, key: String) -> String {
        let sourceExists =
            hidden.sourceTable.map {
                "EXISTS (SELECT 1 FROM \(q($0)) x WHERE x.\"Z_PK\" = \(key) AND x.\"Z_ENT\" IN \(list(hidden.sourceZents)))"
            } ?? "FALSE"
        return "\(key) IS NOT NULL AND NOT \(sourceExists)"
    }

    private func unknownEntityRows(_ checks: ReferenceChecks, examples: Int) throws(ObjectGraphError)
        -> [UnknownEntityRows]
    {
        var found: [UnknownEntityRows] = []
        for table in checks.entityTables {
            let clause = "FROM \(q(table.table)) WHERE (\"Z_ENT\" IS NULL OR \"Z_ENT\" NOT IN \(list(table.zents)))"
            let rows = try read("SELECT COALESCE(\"Z_ENT\", 0), COUNT(*) \(clause) GROUP BY 1")
            for row in 0..<rows.rowCount {
                let zent = rows.integer(row, 0) ?? 0
                let keys = try read(
                    "SELECT \"Z_PK\" FROM \(q(table.table)) WHERE COALESCE(\"Z_ENT\", 0) = $1 ORDER BY 1 LIMIT \(examples)",
                    [String(zent)])
                found.append(
                    UnknownEntityRows(
                        table: table.table, zent: zent, count: Int(rows.integer(row, 1) ?? 0),
                        examples: (0..<keys.rowCount).compactMap { keys.integer($0, 0) }))
            }
        }
        return found
    }

    // MARK: - Repairs

    public func clearDanglingToOnes(_ references: [DanglingReference]) throws(ObjectGraphError) -> Int {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try writeTransaction { (run) throws(ObjectGraphError) -> Int in
            var changed = 0
            for reference in references {
                let declaring = StoreLayout.declaringEntity(
                    of: reference.relationship, from: reference.object.entity, in: model)
                guard
                    let check = checks.toOne.first(where: {
                        $0.entity == declaring && $0.relationship == reference.relationship
                    })
                else { continue }
                var sets = ["\(q(check.column)) = NULL"]
                if let column = check.entityColumn { sets.append("\(q(column)) = NULL") }
                if let column = check.orderColumn { sets.append("\(q(column)) = NULL") }
                sets.append("\"Z_OPT\" = \"Z_OPT\" + 1")
                changed += try run(
                    "UPDATE \(q(check.table)) SET \(sets.joined(separator: ", ")) WHERE \"Z_PK\" = $1 AND \(q(check.column)) = $2",
                    [String(reference.object.key.rawValue), String(reference.missing.key.rawValue)]
                ).changedCount
            }
            return changed
        }
    }

    public func removeUnreachableReferences() throws(ObjectGraphError) -> UnreachableRemoval {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try writeTransaction { (run) throws(ObjectGraphError) -> UnreachableRemoval in
            var removed = UnreachableRemoval()
            for join in checks.joinTables {
                let source = exists(join.source, key: "j.\(q(join.source.column))")
                let destination = exists(join.destination, key: "j.\(q(join.destination.column))")
                removed.joinRows += try run(
                    "DELETE FROM \(q(join.table)) AS j WHERE NOT \(source) AND NOT \(destination)", []
                ).changedCount
            }
            for hidden in checks.hiddenKeys {
                let key = "h.\(q(hidden.column))"
                let order = hidden.orderColumn.map { ", \(q($0)) = NULL" } ?? ""
                removed.foreignKeys += try run(
                    "UPDATE \(q(hidden.table)) AS h SET \(q(hidden.column)) = NULL\(order), \"Z_OPT\" = h.\"Z_OPT\" + 1 "
                        + "WHERE \(hiddenKeyDangles(hidden, key: key))", []
                ).changedCount
            }
            return removed
        }
    }

    public func pruneHistory(before cutoff: HistoryCutoff) throws(ObjectGraphError) -> HistoryPruning {
        try writeTransaction { (run) throws(ObjectGraphError) -> HistoryPruning in
            var pruning = HistoryPruning()
            // The history rows' counters are locked as a save takes them, so no save appends
            // while the history shrinks (PostgresStore+History.swift).
            _ = try run(
                "SELECT \"Z_MAX\" FROM \"Z_PRIMARYKEY\" WHERE \"Z_ENT\" IN (\(PostgresSchema.changeZent), \(PostgresSchema.transactionZent)) ORDER BY 1 FOR UPDATE",
                [])
            guard let last = try run("SELECT MAX(\"Z_PK\") FROM \"ATRANSACTION\"", []).integer(0, 0) else {
                return pruning
            }
            let condition: String
            let parameters: [String?]
            switch cutoff {
            case .transaction(let number):
                condition = "\"Z_PK\" < $1"
                parameters = [String(min(number, last))]
            case .date(let date):
                condition = "\"ZTIMESTAMP\" < $1::double precision AND \"Z_PK\" < $2"
                parameters = [String(date.timeIntervalSinceReferenceDate), String(last)]
            }
            pruning.changes = try run(
                "DELETE FROM \"ACHANGE\" WHERE \"ZTRANSACTIONID\" IN (SELECT \"Z_PK\" FROM \"ATRANSACTION\" WHERE \(condition))",
                parameters
            ).changedCount
            pruning.transactions = try run("DELETE FROM \"ATRANSACTION\" WHERE \(condition)", parameters).changedCount
            pruning.changes += try run(
                "DELETE FROM \"ACHANGE\" c WHERE c.\"ZTRANSACTIONID\" < (SELECT MIN(\"Z_PK\") FROM \"ATRANSACTION\") "
                    + "AND NOT EXISTS (SELECT 1 FROM \"ATRANSACTION\" t WHERE t.\"Z_PK\" = c.\"ZTRANSACTIONID\")", []
            ).changedCount
            // Every mount of the store names its author string by key (authorKey): it stays.
            let used = ["ZAUTHORTS", "ZBUNDLEIDTS", "ZCONTEXTNAMETS", "ZPROCESSIDTS"].map {
                "SELECT \(q($0)) FROM \"ATRANSACTION\" WHERE \(q($0)) IS NOT NULL"
            }.joined(separator: " UNION ")
            pruning.strings = try run(
                "DELETE FROM \"ATRANSACTIONSTRING\" WHERE \"ZNAME\" <> 'storefs' AND \"Z_PK\" NOT IN (\(used))", []
            ).changedCount
            return pruning
        }
    }

    /// `VACUUM (ANALYZE)` of each table of the store's schema: dead rows' space is reused (the
    /// files do not shrink; `VACUUM FULL` would lock every table against the mounts).
    public func reclaimSpace() throws(ObjectGraphError) {
        for table in try tableBytes().keys.sorted() { _ = try read("VACUUM (ANALYZE) \(q(table))") }
    }

    /// A copy of every table of the store's schema in a new schema of the same database,
    /// `SCHEMA_pre_doctor_STAMP`, made in one transaction: mount it with `?schema=` that name.
    public func backUp(stamp: String) throws(ObjectGraphError) -> String? {
        let suffix = "_pre_doctor_" + stamp.lowercased().filter { $0.isLetter || $0.isNumber }
        let name = String(location.schema.prefix(63 - suffix.count)) + suffix
        let tables = try tableBytes().keys.sorted()
        try writeTransaction { (run) throws(ObjectGraphError) in
            _ = try run("CREATE SCHEMA \(q(name))", [])
            for table in tables {
                let copy = "\(q(name)).\(q(table))"
                let original = "\(q(location.schema)).\(q(table))"
                _ = try run("CREATE TABLE \(copy) (LIKE \(original) INCLUDING ALL)", [])
                _ = try run("INSERT INTO \(copy) SELECT * FROM \(original)", [])
            }
        }
        return "schema \(name) of \(location) (mount it with ?schema=\(name))"
    }

    /// Runs `body` in one transaction on the store's write connection (the one saves use, so
    /// repairs and saves of this process never interleave).
    private func writeTransaction<T: Sendable>(_ body: (Run) throws(ObjectGraphError) -> T) throws(ObjectGraphError)
        -> T
    {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(location) is open read-only") }
        try checkOpen()
        return try writer.withLock { (kept) throws(ObjectGraphError) -> T in
            if kept == nil || kept?.isBroken == true {
                kept = try PostgresConnection(location, timeout: location.statementTimeout)
            }
            guard let connection = kept else { throw ObjectGraphError(.io, "\(location): no connection") }
            _ = try connection.execute("BEGIN")
            do throws(ObjectGraphError) {
                let result = try body { (sql, parameters) throws(ObjectGraphError) -> PostgresResult in
                    requests.add(1, ordering: .relaxed)
                    return try connection.execute(sql, parameters)
                }
                _ = try connection.execute("COMMIT")
                return result
            } catch {
                if connection.isBroken { kept = nil } else { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    // MARK: - SQL text

    private func q(_ name: String) -> String { SQLText.identifier(name) }

    /// Z_ENT numbers (integers from the layout, never input) as an SQL list; `(NULL)` for none.
    private func list(_ zents: [Int64]) -> String {
        zents.isEmpty ? "(NULL)" : "(" + zents.map(String.init).joined(separator: ", ") + ")"
    }
}
