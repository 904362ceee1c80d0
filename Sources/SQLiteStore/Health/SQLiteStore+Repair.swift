import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

// `storefs doctor --fix` on an SQLite store: the statements for what a save cannot express (see
// SQLiteStore+Examination.swift for why they are kept here, and StoreRepair.swift for what goes
// through saves). Each runs in one write transaction of the store's writer.
extension SQLiteStore: RepairableStore {
    public func clearDanglingToOnes(_ references: [DanglingReference]) throws(ObjectGraphError) -> Int {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try write { db in
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
                sets.append("Z_OPT = Z_OPT + 1")
                changed += try execute(
                    db,
                    "UPDATE \(q(check.table)) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ? AND \(q(check.column)) = ?",
                    [reference.object.key.rawValue, reference.missing.key.rawValue], cached: false)
            }
            return changed
        }
    }

    public func removeUnreachableReferences() throws(ObjectGraphError) -> UnreachableRemoval {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try write { db in
            var removed = UnreachableRemoval()
            for join in checks.joinTables {
                let source = exists(join.source, key: "j.\(q(join.source.column))")
                let destination = exists(join.destination, key: "j.\(q(join.destination.column))")
                removed.joinRows += try execute(
                    db, "DELETE FROM \(q(join.table)) AS j WHERE NOT \(source) AND NOT \(destination)", cached: false)
            }
            for hidden in checks.hiddenKeys {
                let t = q(hidden.table)
                let key = "\(t).\(q(hidden.column))"
                let sourceExists =
                    hidden.sourceTable.map {
                        "EXISTS (SELECT 1 FROM \(q($0)) x WHERE x.Z_PK = \(key) AND x.Z_ENT IN \(list(hidden.sourceZents)))"
                    } ?? "(0)"
                let order = hidden.orderColumn.map { ", \(q($0)) = NULL" } ?? ""
                removed.foreignKeys += try execute(
                    db,
                    "UPDATE \(t) SET \(q(hidden.column)) = NULL\(order), Z_OPT = Z_OPT + 1 WHERE \(key) IS NOT NULL AND NOT \(sourceExists)",
                    cached: false)
            }
            return removed
        }
    }

    public func pruneHistory(before cutoff: HistoryCutoff) throws(ObjectGraphError) -> HistoryPruning {
        try write { db in
            var pruning = HistoryPruning()
            let schema = try FileSchema.read(db, file: path)
            guard ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"].allSatisfy({ schema.table(named: $0) != nil })
            else {
                throw ObjectGraphError(
                    .notFound, "\(path) keeps no persistent history (no ATRANSACTION, ACHANGE tables)")
            }
            let last = try integer(db, "SELECT MAX(Z_PK) FROM ATRANSACTION")
            guard last > 0 else { return pruning }
            // The newest transaction stays whatever the cut-off: it shows the app tracks history.
            let condition: String
            let arguments: StatementArguments
            switch cutoff {
            case .transaction(let number):
                condition = "Z_PK < ?"
                arguments = [min(number, last)]
            case .date(let date):
                condition = "ZTIMESTAMP < ? AND Z_PK < ?"
                arguments = [date.timeIntervalSinceReferenceDate, last]
            }
            pruning.changes = try execute(
                db, "DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT Z_PK FROM ATRANSACTION WHERE \(condition))",
                arguments, cached: false)
            pruning.transactions = try execute(
                db, "DELETE FROM ATRANSACTION WHERE \(condition)", arguments, cached: false)
            // Changes whose transaction was deleted before (by another tool) and lies below the cut.
            pruning.changes += try execute(
                db,
                "DELETE FROM ACHANGE WHERE ZTRANSACTIONID < (SELECT MIN(Z_PK) FROM ATRANSACTION) "
                    + "AND NOT EXISTS (SELECT 1 FROM ATRANSACTION t WHERE t.Z_PK = ACHANGE.ZTRANSACTIONID)",
                cached: false)
            // Strings no transaction names any more: every ...TS column of ATRANSACTION names one.
            let names = (schema.table(named: "ATRANSACTION")?.columns ?? []).map(\.name).filter {
                $0.uppercased().hasSuffix("TS")
            }
            if !names.isEmpty {
                let used = names.map { "SELECT \(q($0)) FROM ATRANSACTION WHERE \(q($0)) IS NOT NULL" }.joined(
                    separator: " UNION ")
                pruning.strings = try execute(
                    db, "DELETE FROM ATRANSACTIONSTRING WHERE Z_PK NOT IN (\(used))", cached: false)
            }
            return pruning
        }
    }

    /// `VACUUM`, then (in WAL mode) a checkpoint that empties the -wal: the file shrinks to what
    /// it holds.
    public func reclaimSpace() throws(ObjectGraphError) {
        let writer = try writer()
        do {
            try writer.writeWithoutTransaction { db in
                requests.add(1, ordering: .relaxed)
                try db.execute(sql: "VACUUM")
                if isWAL { _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            }
        } catch {
            throw Self.mapError(error, file: path)
        }
    }
}
