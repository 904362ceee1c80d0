import Foundation
import Logging
import ObjectGraph
import RelationalCore

/// The PostgreSQL store type: stores named by `postgresql://` URLs (``PostgresLocation``),
/// written by several processes on several machines at once.
public struct PostgresStoreType: PersistentStoreType {
    public init() {}

    public var name: String { PostgresStore.typeName }
    public var fileExtensions: [String] { [] }
    public var urlSchemes: [String] { PostgresLocation.schemes }
    /// The server keeps writers apart (optimistic locking, keys handed out by the server).
    public var allowsSeveralWriters: Bool { true }

    public func storeExists(at url: URL) throws(ObjectGraphError) -> Bool {
        let location = try PostgresLocation(url)
        let connection = try PostgresConnection(location, timeout: location.statementTimeout)
        return try PostgresStore.exists(connection)
    }

    public func metadata(at url: URL) throws(ObjectGraphError) -> StoreMetadata {
        let location = try PostgresLocation(url)
        let connection = try PostgresConnection(location, timeout: location.statementTimeout)
        guard try PostgresStore.exists(connection) else {
            throw ObjectGraphError(.notFound, "\(location) holds no storefs store in schema \(location.schema)")
        }
        return try PostgresStore.readMetadata(connection, location)
    }

    public func open(
        at url: URL, model: ManagedObjectModel?, options: StoreOptions, initialMetadata: StoreMetadata
    ) throws(ObjectGraphError) -> any PersistentStore {
        try PostgresStore(
            location: try PostgresLocation(url), model: model, options: options, initialMetadata: initialMetadata)
    }

    /// Removes a store (a migration into it that failed part-way): drops exactly the tables its
    /// kept model's layout names and the bookkeeping and history tables, in one transaction, then
    /// the schema if nothing else is left in it. Nothing it did not make is touched.
    public func removeStore(at url: URL) throws(ObjectGraphError) {
        let location = try PostgresLocation(url)
        let store = try PostgresStore(location: location, model: nil, options: StoreOptions(readOnly: true))
        let tables =
            store.layout.plannedTables.map(\.name) + [
                "Z_PRIMARYKEY", "Z_METADATA", "ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"
            ]
        store.close()
        let connection = try PostgresConnection(location, timeout: location.statementTimeout)
        _ = try connection.execute("BEGIN")
        do throws(ObjectGraphError) {
            for table in tables { _ = try connection.execute("DROP TABLE IF EXISTS \(SQL.identifier(table))") }
            _ = try connection.execute("COMMIT")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
        // RESTRICT: a schema that holds anything else stays.
        _ = try? connection.execute("DROP SCHEMA IF EXISTS \(SQL.identifier(location.schema)) RESTRICT")
    }
}
