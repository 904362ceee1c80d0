/// The key of every object of a store, by root entity: what a reference must name to exist, for
/// the stores that cannot find dangling references in SQL (atomic stores, whose objects are in
/// memory anyway). One set of keys per root entity, since subentities share their root's keys.
///
/// Threading: a value; built once per scan.
struct ExistingKeys {
    private let model: ManagedObjectModel
    private var keys: [EntityID: Set<Int64>] = [:]

    /// No keys: every reference looks dangling (for a scan that does not look).
    init(model: ManagedObjectModel) { self.model = model }

    /// Every object's key in `store`.
    init(of store: any PersistentStore, model: ManagedObjectModel) throws(ObjectGraphError) {
        self.model = model
        for entity in model.entities {
            for id in try store.objectIDs(of: entity.id) { keys[entity.rootID, default: []].insert(id.key.rawValue) }
        }
    }

    /// Whether an object with `id` exists (false for an entity the model does not have).
    func contains(_ id: ObjectID) -> Bool {
        guard id.entity.rawValue >= 1, id.entity.rawValue <= model.entities.count else { return false }
        return keys[model[id.entity].rootID]?.contains(id.key.rawValue) ?? false
    }
}
