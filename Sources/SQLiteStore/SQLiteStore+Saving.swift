import CoreDataSchema
import Foundation
import GRDB
import ObjectGraph
import RelationalCore

extension SQLiteStore {
    public func save(_ request: SaveRequest) throws(ObjectGraphError) {
        _ = try saveReportingEffects(request)
    }

    /// Applies a save in one write transaction (``RelationalRules/apply(_:on:history:extensions:)``
    /// writes Core Data's rows) with what Core Data's mechanisms add to it: the triggers run
    /// (their hooks report the rows they changed), persistent history is appended, large
    /// external values are written to files before the commit and replaced ones removed after
    /// it. Any error (a conflict included) rolls back everything.
    public func saveReportingEffects(_ request: SaveRequest) throws(ObjectGraphError) -> SaveEffects {
        guard !isReadOnly else { throw ObjectGraphError(.readOnly, "the store \(path) is open read-only") }
        guard !request.isEmpty else { return SaveEffects() }
        try refuseTextKeyTables(request)
        var extensions = SQLiteSaveExtensions(mechanisms: mechanisms, layout: layout)
        do {
            let effects = try write { db throws in
                mechanisms.effects.begin()
                let connection = connection(db)
                let written = try core.apply(
                    request, on: connection, history: mechanisms.history?.slots, extensions: &extensions)
                if let history = mechanisms.history, request.recordsHistory {
                    try history.append(
                        HistoryRow.rows(of: written, slots: history.slots, layout: layout), on: connection)
                }
                var effects = storeEffects(of: written, reports: mechanisms.effects.drain())
                // Holding the write lock, nobody else commits until ours: the writer's
                // data_version (which its own commits never move) is the token as of this save.
                effects.changeTokenAtSave = try Int64.fetchOne(db, sql: "PRAGMA data_version")
                return effects
            }
            extensions.files.committed(logger: logger)
            return effects
        } catch {
            extensions.files.rolledBack()
            throw error
        }
    }

    /// What the triggers and the store's own clean-up changed, as objects to read again;
    /// objects this save deleted are left out.
    private func storeEffects(
        of written: WrittenChanges<SQLValue>,
        reports: (reports: Set<TriggerEffects.Report>, overflowed: Bool, malformed: [String: Int])
    ) -> SaveEffects {
        for (function, count) in reports.malformed.sorted(by: { $0.key < $1.key }) {
            logger.warning(
                "\(path): a trigger called \(function) \(count) times with arguments of unexpected types; ignored")
        }
        var refreshed = written.repaired
        for report in reports.reports {
            guard let entity = layout.entityByZent[report.zent], report.key > 0 else { continue }
            refreshed.insert(ObjectID(entity: entity, key: PrimaryKey(report.key)))
        }
        for (id, _) in written.deleted { refreshed.remove(id) }
        // A row a trigger may have changed too is read again: not every trigger reports its
        // changes through a hook.
        let rowsAsRead = written.rowsAsRead.subtracting(refreshed).filter {
            !mechanisms.triggerMaintainedEntities.contains($0.entity)
        }
        return SaveEffects(refreshed: refreshed, refreshesEverything: reports.overflowed, rowsAsRead: rowsAsRead)
    }

    public func check(_ value: AttributeValue, for attribute: AttributeDescription, of entity: EntityID)
        throws(ObjectGraphError)
    {
        let entityName = try core.entityLayout(entity).name
        if mechanisms.isComputed(attribute.name, of: entity) { throw computedAttribute(attribute.name, of: entityName) }
        _ = try SQLiteDialect().encode(value, as: attribute, entity: entityName)
    }

    public func checkRemoval(of attribute: AttributeDescription, of entity: EntityID) throws(ObjectGraphError) {
        let entityName = try core.entityLayout(entity).name
        if mechanisms.isComputed(attribute.name, of: entity) { throw computedAttribute(attribute.name, of: entityName) }
    }

    private func computedAttribute(_ name: String, of entity: String) -> ObjectGraphError {
        ObjectGraphError(
            .notPermitted,
            "\(entity).\(name) is a derived attribute: the store's triggers compute it, so it cannot be set")
    }
}

/// What Core Data's mechanisms add to the rows of a save: derived attributes the triggers
/// compute are never written; values of attributes that allow external storage go inline with
/// their marker or, when large, to a file whose reference is stored (``ExternalDataFolder``);
/// the files of values an update or delete replaces are listed, to be removed once the save has
/// committed.
///
/// Threading: one per save, on the writer's thread.
struct SQLiteSaveExtensions: SaveExtensions {
    let mechanisms: CoreDataMechanisms
    let layout: StoreLayout
    var files = ExternalDataChanges()

    func isComputed(_ name: String, of entity: EntityID) -> Bool { mechanisms.isComputed(name, of: entity) }

    mutating func stored(_ value: SQLValue, for attribute: AttributeDescription, of id: ObjectID)
        throws(ObjectGraphError) -> SQLValue
    {
        guard case .blob(let data) = value else { return value }
        return SQLiteRow.value(try mechanisms.externalData.encode(data, changes: &files))
    }

    mutating func willChange(_ id: ObjectID, attributes: Set<String>?, on connection: some SQLConnection)
        throws(ObjectGraphError)
    {
        let columns = layout[id.entity].attributes.filter {
            $0.attribute.allowsExternalBinaryDataStorage && (attributes?.contains($0.attribute.name) ?? true)
        }.compactMap(\.column)
        guard !columns.isEmpty, let table = layout[id.entity].table else { return }
        let selected = SQL(text: columns.map(SQL.identifier).joined(separator: ", "))
        var replaced: [URL] = []
        let externalData = mechanisms.externalData
        try connection.query("SELECT \(selected) FROM \(identifier: table) WHERE Z_PK = \(id.key.rawValue)") { row in
            for i in columns.indices {
                if let file = externalData.file(referencedBy: SQLiteRow.databaseValue(row.value(i))) {
                    replaced.append(file)
                }
            }
        }
        files.obsolete += replaced
    }
}
