import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph

// `storefs doctor --fix` on an SQLite store: what a save cannot express (StoreRepair.swift says
// what goes through saves), in the statements both engines share (ReferenceStatements.swift) and
// SQLite's own history pruning and VACUUM. Each runs in one write transaction of the store's writer.
extension SQLiteStore: RepairableStore {
    public func clearDanglingToOnes(_ references: [DanglingReference]) throws(ObjectGraphError) -> Int {
        let checks = ReferenceChecks(layout: layout, model: model)
        return try write { db in
            var changed = 0
            for reference in references {
                guard let check = checks.check(of: reference, in: model) else { continue }
                changed += try execute(
                    db, ReferenceChecks.nullify(check, object: "?", missing: "?"),
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
                removed.joinRows += try execute(db, ReferenceChecks.removeUnreachableRows(of: join), cached: false)
            }
            for hidden in checks.hiddenKeys {
                removed.foreignKeys += try execute(db, ReferenceChecks.clearDanglingKeys(hidden), cached: false)
            }
            return removed
        }
    }

    public func pruneHistory(before cutoff: HistoryCutoff) throws(ObjectGraphError) -> HistoryPruning {
        try write { db in
            var pruning = HistoryPruning()
            let schema = try FileSchema.read(db, file: path)
            guard ReferenceChecks.historyTables.allSatisfy({ schema.table(named: $0) != nil })
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
