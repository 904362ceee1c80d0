import CoreDataSchema
import Foundation
import ObjectGraph
import RelationalCore

// `storefs doctor` on a PostgreSQL store: what only PostgreSQL has (table sizes, a schema copy as
// the backup, VACUUM, history pruning under the counters' locks) is here; the statements both
// engines share, and the findings built from their answers, are ReferenceStatements.swift's
// (CoreDataSchema), run here on this store's connections. What a save can express (a nullified
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
        try checks.findOrphans(in: &examination.orphans, model: model, examples: examples, rows: integerRows)
        // Keys come from Z_MAX raised to the highest key in the same statement (reserveKeys): a
        // counter behind its rows hands out no key twice, so none is reported.
        examination.integrity = IntegrityCheck(
            checked: false, method: "PostgreSQL keeps its own pages consistent (WAL, checksums); no check is run")
        return examination
    }

    public func danglingToOnes(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        try ReferenceChecks(layout: layout, model: model).danglingToOnes(
            layout: layout, limit: limit, rows: integerRows)
    }

    public func danglingToManyMembers(limit: Int) throws(ObjectGraphError) -> [DanglingReference] {
        try ReferenceChecks(layout: layout, model: model).danglingToManyMembers(
            layout: layout, limit: limit, rows: integerRows)
    }

    /// Every row, each column as an integer (nil for NULL).
    private func integerRows(_ sql: String) throws(ObjectGraphError) -> ReferenceChecks.IntegerRows {
        let rows = try read(sql)
        return (0..<rows.rowCount).map { row in (0..<rows.columnCount).map { rows.integer(row, $0) } }
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
        let first = try read(ReferenceChecks.historyRange)
        summary.transactions = Int(first.integer(0, 0) ?? 0)
        summary.firstTransaction = first.integer(0, 1)
        summary.lastTransaction = first.integer(0, 2)
        summary.oldest = first.text(0, 3).flatMap(PostgresValueCoding.double).map(
            Date.init(timeIntervalSinceReferenceDate:))
        summary.newest = first.text(0, 4).flatMap(PostgresValueCoding.double).map(
            Date.init(timeIntervalSinceReferenceDate:))
        func count(_ sql: String) throws(ObjectGraphError) -> Int { Int(try read(sql).integer(0, 0) ?? 0) }
        summary.changes = try count(ReferenceChecks.historyChanges)
        summary.strings = try count(ReferenceChecks.historyStrings)
        summary.changesWithoutTransaction = try count(ReferenceChecks.changesWithoutTransaction)
        summary.bytes = ReferenceChecks.historyTables.reduce(0) { $0 + (tables[$1] ?? 0) }
        return summary
    }

    // MARK: - Repairs

    public func clearDanglingToOnes(_ references: [DanglingReference]) throws(ObjectGraphError) -> Int {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try writeTransaction { (run) throws(ObjectGraphError) -> Int in
            var changed = 0
            for reference in references {
                guard let check = checks.check(of: reference, in: model) else { continue }
                changed += try run(
                    ReferenceChecks.nullify(check, object: "$1", missing: "$2"),
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
                removed.joinRows += try run(ReferenceChecks.removeUnreachableRows(of: join), []).changedCount
            }
            for hidden in checks.hiddenKeys {
                removed.foreignKeys += try run(ReferenceChecks.clearDanglingKeys(hidden), []).changedCount
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
        // Named with its schema: VACUUM runs outside any transaction, so without the
        // search path each transaction is given (PostgresConnection+Settings.swift).
        for table in try tableBytes().keys.sorted() {
            _ = try read("VACUUM (ANALYZE) \(q(location.schema)).\(q(table))")
        }
    }

    /// A copy of every table of the store's schema in a new schema of the same database,
    /// `SCHEMA_pre_doctor_STAMP` (`…_2`, `…_3` when fixes of one second each keep one), made in
    /// one transaction: mount it with `?schema=` that name.
    public func backUp(stamp: String) throws(ObjectGraphError) -> String? {
        let tables = try tableBytes().keys.sorted()
        let name = try writeTransaction { (run) throws(ObjectGraphError) -> String in
            var chosen: String?
            for attempt in 1...100 {
                let suffix =
                    "_pre_doctor_" + stamp.lowercased().filter { $0.isLetter || $0.isNumber }
                    + (attempt == 1 ? "" : "_\(attempt)")
                let candidate = String(location.schema.prefix(63 - suffix.count)) + suffix
                let taken = try run("SELECT 1 FROM pg_namespace WHERE nspname = $1", [candidate])
                if taken.rowCount == 0 {
                    chosen = candidate
                    break
                }
            }
            guard let name = chosen else {
                throw ObjectGraphError(
                    .io, "\(location): 100 backups of this second exist already; drop some or try again")
            }
            _ = try run("CREATE SCHEMA \(q(name))", [])
            for table in tables {
                let copy = "\(q(name)).\(q(table))"
                let original = "\(q(location.schema)).\(q(table))"
                _ = try run("CREATE TABLE \(copy) (LIKE \(original) INCLUDING ALL)", [])
                _ = try run("INSERT INTO \(copy) SELECT * FROM \(original)", [])
            }
            return name
        }
        return "schema \(name) of \(location) (mount it with ?schema=\(name))"
    }

    /// A statement with text parameters, on the connection of the transaction at hand.
    typealias Run = (String, [String?]) throws(ObjectGraphError) -> PostgresResult

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

    private func q(_ name: String) -> String { SQL.identifier(name) }
}
