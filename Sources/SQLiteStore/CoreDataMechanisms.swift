import CoreDataSchema
import Foundation
import GRDB
import Logging
import ObjectGraph

/// The Core Data mechanisms a store's file asks its writer to honour, found once when the store
/// opens: the functions its triggers call (``TriggerCheck``), the derived attributes those
/// triggers compute, the persistent history its app tracks (``PersistentHistory``), and the
/// folder of its external binary data (``ExternalDataFolder``).
///
/// A store opened for writing whose mechanisms storefs cannot honour (a trigger calling an
/// unknown function, history in an unknown layout or without the app's model) is refused then,
/// with a message that says why and that a read-only mount works: never accepted and then
/// half-written. Read-only stores only look for the external data folder.
///
/// Threading: immutable after the open, apart from ``effects`` (its own lock); share it freely.
struct CoreDataMechanisms: Sendable {
    /// The hooks registered on the connection that writes.
    let hooks: [String]
    /// What those hooks report during a save.
    let effects = TriggerEffects()
    /// Derived attributes the store's triggers compute, by entity: never written by storefs.
    let computedAttributes: [EntityID: Set<String>]
    /// Entities whose table has columns a trigger sets: a save of one of their rows may leave
    /// more changed than it wrote, whether or not the trigger reports it through a hook.
    let triggerMaintainedEntities: Set<EntityID>
    let history: PersistentHistory?
    let externalData: ExternalDataFolder

    /// A read-only store's: nothing to check.
    init(url: URL, logger: Logger) {
        hooks = CoreDataFunctions.knownHooks
        computedAttributes = [:]
        triggerMaintainedEntities = []
        history = nil
        externalData = ExternalDataFolder(store: url, logger: logger)
    }

    /// A store opened for writing: runs the trigger check and finds the history.
    init(
        url: URL, reader: any DatabaseReader, schema: FileSchema, model: ManagedObjectModel, modelSource: ModelSource,
        layout: StoreLayout, logger: Logger
    ) throws(ObjectGraphError) {
        let path = url.path
        let check = try TriggerCheck.run(path: path)
        if let refusal = check.refusal(file: path) { throw refusal }
        hooks = check.hooks
        if check.triggerCount > 0 {
            logger.info(
                "\(path): \(check.triggerCount) Core Data triggers; their functions are provided (\(check.hooks.joined(separator: ", ")), NSCoreDataNow)"
            )
        }
        var computed: [EntityID: Set<String>] = [:]
        var maintainedEntities: Set<EntityID> = []
        for entity in layout.entities {
            guard let table = entity.table?.uppercased(), let maintained = check.maintainedColumns[table] else {
                continue
            }
            if !maintained.isEmpty { maintainedEntities.insert(entity.id) }
            for attribute in entity.attributes where attribute.attribute.derivationExpression != nil {
                if let column = attribute.column?.uppercased(), maintained.contains(column) {
                    computed[entity.id, default: []].insert(attribute.attribute.name)
                }
            }
        }
        computedAttributes = computed
        triggerMaintainedEntities = maintainedEntities
        do {
            history = try reader.read { db in
                try PersistentHistory.find(
                    in: db, schema: schema, model: model, modelSource: modelSource, layout: layout, file: path,
                    logger: logger)
            }
        } catch {
            throw SQLiteStore.mapError(error, file: path)
        }
        if history != nil {
            logger.info("\(path): keeps Core Data's persistent history; each commit appends a transaction")
        }
        externalData = ExternalDataFolder(store: url, logger: logger)
    }

    /// Whether `name` of `entity` is a derived attribute the store's triggers compute.
    func isComputed(_ name: String, of entity: EntityID) -> Bool {
        computedAttributes[entity]?.contains(name) ?? false
    }
}
