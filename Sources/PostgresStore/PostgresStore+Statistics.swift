import Foundation
import ObjectGraph
import RelationalCore

extension PostgresStore {
    /// Runs `ANALYZE` on the store's tables after a save that inserted or deleted more than
    /// ``largeSave`` rows (a migration, a large copy), so the planner plans the next queries
    /// with the tables' real sizes and value spreads.
    ///
    /// Why storefs does it rather than leaving it to autovacuum: autovacuum looks at a table only
    /// once a minute (`autovacuum_naptime`), and until it does, the planner takes a freshly
    /// loaded table for a near-empty one. A count over 20,000 objects then combined two index
    /// scans (the entity column's and the primary key's) instead of reading the table once:
    /// 8.8 ms of server time against 5.5 ms after ANALYZE (docs/benchmarks.md, issue 35, i35b).
    ///
    /// Best effort, after the save committed and outside the writer's lock: a failure is logged,
    /// never turned into the save's error (the rows are saved; autovacuum analyzes later).
    func analyzeAfterLargeSave(_ request: SaveRequest) {
        guard request.inserted.count + request.deleted.count > Self.largeSave else { return }
        do throws(ObjectGraphError) {
            let tables = try read(
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                    + "WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname")
            let names = (0..<tables.rowCount).compactMap { tables.text($0, 0) }
            guard !names.isEmpty else { return }
            _ = try read("ANALYZE " + names.map(SQL.identifier).joined(separator: ", "))
        } catch {
            logger.notice("\(location): ANALYZE after a large save failed (autovacuum will do it): \(error.message)")
        }
    }
}
