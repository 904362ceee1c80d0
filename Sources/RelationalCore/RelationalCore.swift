import CoreDataSchema
import Foundation
import Logging
import ObjectGraph

/// Core Data's relational rules, written once for every SQL engine: how objects are read from
/// their rows (``snapshots(for:on:lockingRows:)``, to-many lists, listings, counts, key
/// counters), and how a save is written (the order of its statements, row plans, the conflict
/// checks of optimistic locking, key counters, to-many differences, the repairs that keep
/// relationships consistent, the rows persistent history records). Each engine gives its
/// ``SQLDialect`` and runs the statements on its ``SQLConnection``; what only one engine has
/// (SQLite: Core Data's triggers and external data files; PostgreSQL: announcements) stays in
/// its store module.
///
/// Threading: a value; share it freely. Its methods run on the connection they are given.
package struct RelationalRules: Sendable {
    package let model: ManagedObjectModel
    package let layout: StoreLayout
    package let dialect: any SQLDialect
    /// The store in messages (a file's path, a URL without its password).
    package let place: String
    package let logger: Logger

    package init(model: ManagedObjectModel, layout: StoreLayout, dialect: any SQLDialect, place: String, logger: Logger)
    {
        self.model = model
        self.layout = layout
        self.dialect = dialect
        self.place = place
        self.logger = logger
    }

    /// The layout of `id`, or notFound for an entity the model does not have.
    package func entityLayout(_ id: EntityID) throws(ObjectGraphError) -> StoreLayout.EntityLayout {
        guard id.rawValue >= 1, id.rawValue <= layout.entities.count else {
            throw ObjectGraphError(.notFound, "\(id) is not an entity of the store's model")
        }
        return layout[id]
    }

    /// The table and Z_ENT of the root entity of `entity`'s tree.
    package func rootTable(of entity: EntityID) throws(ObjectGraphError) -> (table: String, zent: Int64) {
        let root = layout[try entityLayout(entity).rootID]
        guard let table = root.table, let zent = root.zent else {
            throw ObjectGraphError(.unsupported, "entity \(root.name) has no table in \(place)")
        }
        return (table, zent)
    }

    /// Table, Z_ENT and root Z_ENT of an object to write.
    package func location(of id: ObjectID) throws(ObjectGraphError) -> (table: String, zent: Int64, rootZent: Int64) {
        try layout.place(of: id, in: place)
    }

    /// `Entity pN`, for messages.
    package func name(of id: ObjectID) -> String {
        guard id.entity.rawValue >= 1, id.entity.rawValue <= layout.entities.count else { return "\(id)" }
        return "\(layout[id.entity].name) p\(id.key.rawValue)"
    }
}
